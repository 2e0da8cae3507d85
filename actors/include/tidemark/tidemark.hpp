// Everything an application needs to build and run a job in one include: the typed stream API
// (job, stream<T>, keyed and windowed streams, sinks) and the runtime entry tidemark::run. Code that
// needs less includes the module headers directly.
#pragma once

#include "tidemark/core/job.hpp"
#include "tidemark/runtime/runtime.hpp"
