// Who may do what (README, "Security model"). gnnd often runs as root or a service user and is shared by
// every trainer on a node, so a peer is never trusted with gnnd's own privileges: trainers (allowed_uids,
// allowed_gids; everyone when both are empty) open sessions; only administrators (gnnd's own uid, root,
// admin_uids, admin_gids) load and unload datasets, and only directories under dataset_roots that they
// could read themselves. Over TCP peers are unknown: administration is refused unless tcp_admin is set.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "gnnd/v1/config.pb.h"
#include "server/peer_credentials.h"

namespace gnnd {

class AccessPolicy {
 public:
  explicit AccessPolicy(const v1::DaemonConfig& config) : config_(config) {}

  // May `peer` use gnnd at all (list, describe, stats, sessions)?
  absl::Status AuthorizeTrainer(const PeerCredentials& peer) const;
  // May `peer` load and unload datasets?
  absl::Status AuthorizeAdmin(const PeerCredentials& peer) const;
  // The directory `path` resolved, if it lies under a dataset root and `peer` could read it and its
  // files; PERMISSION_DENIED (or NOT_FOUND) naming the path otherwise.
  absl::StatusOr<std::string> ResolveLoadPath(const std::string& path, const PeerCredentials& peer) const;

 private:
  const v1::DaemonConfig config_;
};

}  // namespace gnnd
