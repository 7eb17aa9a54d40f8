// gnnd's Stats in the Prometheus text exposition format (version 0.0.4), for the metrics endpoint.
#pragma once

#include <string>

#include "gnnd/v1/service.pb.h"

namespace gnnd {

std::string RenderPrometheus(const v1::Stats& stats);

}  // namespace gnnd
