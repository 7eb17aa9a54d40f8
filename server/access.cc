#include "server/access.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status.h"
#include "common/dataset/dataset.h"
#include "common/dataset/manifest.h"

namespace gnnd {
namespace {

template <typename List>
bool Contains(const List& list, uint32_t value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// The peer's primary and supplementary groups (the socket reports only the primary one). Reentrant: RPCs
// are authorized on many threads at once.
std::vector<gid_t> Groups(const PeerCredentials& peer) {
  std::vector<gid_t> groups = {peer.gid};
  passwd entry;
  passwd* user = nullptr;
  std::vector<char> buffer(16384);
  if (::getpwuid_r(peer.uid, &entry, buffer.data(), buffer.size(), &user) == 0 && user != nullptr) {
    int count = 64;
    std::vector<gid_t> found(count);
    if (::getgrouplist(user->pw_name, peer.gid, found.data(), &count) < 0) {
      found.resize(count);
      ::getgrouplist(user->pw_name, peer.gid, found.data(), &count);
    }
    found.resize(std::max(count, 0));
    groups.insert(groups.end(), found.begin(), found.end());
  }
  return groups;
}

// Whether `peer` has `bits` (a mask of the owner's r/w/x bits: S_IRUSR, S_IXUSR) on `st` by mode bits.
bool PeerMay(const struct stat& st, const PeerCredentials& peer, const std::vector<gid_t>& groups, mode_t bits) {
  if (peer.uid == 0) return true;
  if (st.st_uid == peer.uid) return (st.st_mode & bits) == bits;
  if (std::find(groups.begin(), groups.end(), st.st_gid) != groups.end())
    return (st.st_mode & (bits >> 3)) == bits >> 3;
  return (st.st_mode & (bits >> 6)) == bits >> 6;
}

std::string Resolve(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : std::string();
}

}  // namespace

absl::Status AccessPolicy::AuthorizeTrainer(const PeerCredentials& peer) const {
  if (config_.allowed_uids().empty() && config_.allowed_gids().empty()) return absl::OkStatus();
  if (!peer.known) {
    return absl::PermissionDeniedError("this gnnd only admits peers it can identify (Unix socket, SO_PEERCRED)");
  }
  if (Contains(config_.allowed_uids(), peer.uid)) return absl::OkStatus();
  for (gid_t gid : Groups(peer)) {
    if (Contains(config_.allowed_gids(), gid)) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("uid ", peer.uid, " / gid ", peer.gid, " is not in allowed_uids or allowed_gids"));
}

absl::Status AccessPolicy::AuthorizeAdmin(const PeerCredentials& peer) const {
  GNND_RETURN_IF_ERROR(AuthorizeTrainer(peer));
  if (!peer.known) {
    if (config_.tcp_admin()) return absl::OkStatus();
    return absl::PermissionDeniedError(
        "loading and unloading datasets is refused over TCP, where peers are not identified (tcp_admin allows it)");
  }
  if (peer.uid == ::geteuid() || peer.uid == 0 || Contains(config_.admin_uids(), peer.uid)) return absl::OkStatus();
  for (gid_t gid : Groups(peer)) {
    if (Contains(config_.admin_gids(), gid)) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat("uid ", peer.uid,
                                                  " may not load or unload datasets (administrators: gnnd's own uid ",
                                                  ::geteuid(), ", root, admin_uids, admin_gids)"));
}

absl::StatusOr<std::string> AccessPolicy::ResolveLoadPath(const std::string& path, const PeerCredentials& peer) const {
  if (path.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("path: contains a NUL byte");
  }
  if (config_.dataset_roots().empty()) {
    return absl::PermissionDeniedError(
        "path: this gnnd loads datasets over RPC only from its dataset_roots, and none are configured "
        "(dataset_roots in its config, or gnnd --dataset-roots DIR)");
  }
  const std::string resolved = Resolve(path);
  if (resolved.empty()) {
    return absl::NotFoundError(absl::StrCat("path: ", path, ": no such directory (not a dataset directory?)"));
  }
  bool under_root = false;
  for (const std::string& root : config_.dataset_roots()) {
    const std::string resolved_root = Resolve(root);
    if (resolved_root.empty()) continue;
    under_root |=
        resolved == resolved_root || absl::StartsWith(resolved, resolved_root == "/" ? "/" : resolved_root + "/");
  }
  if (!under_root) {
    return absl::PermissionDeniedError(absl::StrCat("path: ", path, " (", resolved,
                                                    ") is not under any of dataset_roots (",
                                                    absl::StrJoin(config_.dataset_roots(), ", "), ")"));
  }
  if (!peer.known) return resolved;  // tcp_admin: nobody to check against
  // The peer must be able to read the dataset itself: gnnd's privileges are not lent out.
  const std::vector<gid_t> groups = Groups(peer);
  auto denied = [&](const std::string& what) {
    return absl::PermissionDeniedError(absl::StrCat("path: uid ", peer.uid, " may not read ", what));
  };
  for (size_t slash = resolved.find('/', 1);; slash = resolved.find('/', slash + 1)) {
    const std::string ancestor = slash == std::string::npos ? resolved : resolved.substr(0, slash);
    struct stat st;
    if (::stat(ancestor.c_str(), &st) != 0 || !PeerMay(st, peer, groups, S_IXUSR)) return denied(ancestor);
    if (slash == std::string::npos) {
      if (!PeerMay(st, peer, groups, S_IRUSR)) return denied(ancestor);
      break;
    }
  }
  // The manifest and every array file, whatever the schema names them.
  std::vector<std::string> files = {kManifestFile};
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(resolved, ec)) {
    const std::string name = entry.path().filename();
    if (absl::EndsWith(name, ".npy")) files.push_back(name);
  }
  for (const std::string& file : files) {
    struct stat st;
    const std::string full = absl::StrCat(resolved, "/", file);
    if (::stat(full.c_str(), &st) == 0 && !PeerMay(st, peer, groups, S_IRUSR)) return denied(full);
  }
  return resolved;
}

}  // namespace gnnd
