// Vantage frontend: the state behind a KernelBuilder or FunctionBuilder while its body is recorded.
// Statements go to the innermost open block of the innermost active body (a thread-local stack), so
// `view[i] = e` inside any lambda lands where the user wrote it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/ir/ir.h"

namespace vantage::detail {

struct BuildCtx {
  bool is_kernel = true;
  std::string name;
  SourceLoc loc;
  int next_id = 0;
  std::vector<std::vector<ir::StmtPtr>> blocks;  // open statement lists, innermost last
  std::vector<Diagnostic> diags;                 // builder-level errors, reported by build()

  std::vector<ir::ParamNode> params;
  std::optional<std::int64_t> threads, grid_blocks;
  std::int64_t grid_multiple = 1;
  std::int64_t shared_budget = 0;
  bool budget_declared = false;
  SourceLoc threads_loc, budget_loc, body_loc, signature_loc;
  Perspective signature = thread(1);
  std::optional<ScalarType> returns;
  ir::StmtPtr body;
  bool body_recorded = false;

  void error(std::string code, SourceLoc at, std::string message) {
    diags.push_back({std::move(code), std::move(message), at, {}});
  }
};

/// The innermost body being recorded on this thread, or null.
BuildCtx* active();

/// Appends a statement to the innermost open block; throws CheckError (V0906) when no body is open.
void append(ir::StmtPtr stmt, SourceLoc loc);

/// A fresh id for a variable or memory name of the active body (0 when none is active).
int fresh_id();

}  // namespace vantage::detail
