// The draw policy an open asks for (OpenSession.draw, or the API 1.x fields that alias it: weight_attr,
// time_attr, temporal_strategy, labor, layer_dependency, batch_dependency), checked against the dataset into a
// session's spec: the one place the wire names a draw policy. Errors name the fields as the request spelled them
// ("open.draw.weighted.attr = ..." or "open.weight_attr = ...").
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/dataset/graph.h"
#include "common/wire/open_request.h"
#include "gnnd/v1/service.pb.h"

namespace gnnd {

// The request's policy as one message: open.draw, or the one the alias fields name (uniform where none does).
// Refuses open.draw beside an alias, two policies' aliases, and a policy's alias without the policy.
absl::StatusOr<v1::DrawPolicy> DrawPolicyOf(const v1::OpenSession& request);

// Sets `shape.sampling`'s draw per relation (its weights, times or LABOR) and disjoint, and a temporal session's
// seed (pair) times, from `request`, checked against `graph`. `first_undrawable`: GraphSummary's (empty: found
// by a pass over the weights asked for). Fanouts, edge data and the seeds (a link session's stage) are set before.
absl::Status SetDrawPolicy(const v1::OpenSession& request, const GraphData& graph,
                           const std::vector<int64_t>& first_undrawable, SessionShape& shape);

}  // namespace gnnd
