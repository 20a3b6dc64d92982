// Vantage: build GPU kernels at run time with checked perspectives. Include this one header.
#pragma once

#include "vantage/builder.hpp"
#include "vantage/cache.hpp"
#include "vantage/compile.hpp"
#include "vantage/diagnostics.hpp"
#include "vantage/launch.hpp"
#include "vantage/library.hpp"
#include "vantage/registry.hpp"
#include "vantage/report.hpp"
#include "vantage/runtime.hpp"
#include "vantage/tune.hpp"
#include "vantage/types.hpp"
#include "vantage/vector.hpp"
#include "vantage/version.hpp"
