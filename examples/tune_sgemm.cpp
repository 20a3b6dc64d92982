// Example: tunes sgemm rung 4 (1-D register blocking) on the best device of this host, through
// vantage::tune: prints a table of every configuration, the best one, and writes CSV and an SVG
// heatmap when asked. `vantage tune sgemm` is the same program, and `vantage tune NAME` tunes the
// other tunable examples. See --help.
#include <string>
#include <vector>

#include "kernels/tuning.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args{"sgemm"};
  args.insert(args.end(), argv + 1, argv + argc);
  return vantage::examples::tune_main(args, "tune_sgemm");
}
