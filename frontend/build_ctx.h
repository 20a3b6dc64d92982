// Vantage frontend: the state behind a KernelBuilder or FunctionBuilder while its body is recorded.
// Each construct's body is an open block; a Scope records into its own block, which must be the
// innermost open one of its builder, and a store through a view goes to the innermost open block of
// the view's builder. Nothing is global or thread-local: two builders never see each other's state.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/ir/ir.h"
#include "vantage/spec.hpp"

namespace vantage::detail {

struct BuildCtx {
  bool is_kernel = true;
  std::string name;
  SourceLoc loc;
  int next_id = 0;  ///< ids of variables and memory names, in order of creation

  struct Block {
    std::uint64_t id;
    std::vector<ir::StmtPtr> stmts;
  };
  std::vector<Block> open;  ///< bodies being recorded, innermost last
  std::uint64_t next_block = 1;
  std::vector<Diagnostic> diags;     ///< builder-level errors, reported by build()
  std::vector<std::string> helpers;  ///< Scope::called_as names, innermost last

  std::vector<ir::ParamNode> params;
  std::vector<ir::TensorMapNode> tensor_maps;
  std::optional<std::int64_t> threads, grid_blocks;
  std::int64_t grid_multiple = 1;
  std::int64_t cluster = 1;
  std::int64_t min_blocks = 0;  ///< KernelBuilder::min_blocks_per_sm (0: not asked)
  std::vector<ir::Requirement> requirements;
  std::int64_t shared_budget = 0;
  bool budget_declared = false;
  SourceLoc threads_loc, grid_loc, budget_loc, body_loc, signature_loc, returns_loc, cluster_loc, min_blocks_loc;
  Perspective signature = thread(1);
  std::optional<ScalarType> returns;
  ir::StmtPtr body;
  bool body_recorded = false;

  void error(std::string code, SourceLoc at, std::string message) {
    diags.push_back({std::move(code), std::move(message), at, {}});
  }
  /// Opens a block for a construct's body; returns its id.
  std::uint64_t open_block() {
    open.push_back({next_block, {}});
    return next_block++;
  }
  /// Closes the innermost block and returns its statements.
  std::vector<ir::StmtPtr> close_block() {
    std::vector<ir::StmtPtr> stmts = std::move(open.back().stmts);
    open.pop_back();
    return stmts;
  }
  /// Records through the scope of block `block`: it must be the innermost open one (V0911), and the
  /// body must still be recorded (V0906, thrown: no build() would report it).
  void record(std::uint64_t block, ir::StmtPtr stmt, SourceLoc at);
  /// Records in the innermost open block (a store through a view of this builder).
  void record_innermost(ir::StmtPtr stmt, SourceLoc at);
};

}  // namespace vantage::detail
