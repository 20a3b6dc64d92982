// Example: tunes sgemm rung 4 (1-D register blocking) on the best device of this host, through
// vantage::tune: prints a table of every configuration, the best one, and writes CSV and an SVG
// heatmap when asked. `vantage tune sgemm` is the same program. See --help.
#include <string>
#include <vector>

#include "kernels/tuning.hpp"

int main(int argc, char** argv) {
  return vantage::examples::tune_sgemm_main(std::vector<std::string>(argv + 1, argv + argc), "tune_sgemm");
}
