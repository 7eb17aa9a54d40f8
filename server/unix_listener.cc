#include "server/unix_listener.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "common/base/status.h"
#include "grpcpp/server_posix.h"

namespace gnnd {

absl::StatusOr<std::unique_ptr<UnixListener>> UnixListener::Bind(const std::string& path, mode_t mode) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path))
    return absl::InvalidArgumentError(absl::StrCat("listen: socket path too long: ", path));
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);

  // A socket file nobody answers on is stale (a killed gnnd); one that answers belongs to a live gnnd.
  if (const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0); probe >= 0) {
    const bool live = ::connect(probe, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    ::close(probe);
    if (live) return absl::AlreadyExistsError(absl::StrCat("listen: another gnnd already serves ", path));
  }
  ::unlink(path.c_str());

  auto listener = std::unique_ptr<UnixListener>(new UnixListener());
  listener->path_ = path;
  listener->fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener->fd_ < 0) return ErrnoStatus(errno, "socket");
  // Create with no permissions, then chmod: no window in which the socket is more open than asked.
  const mode_t old_umask = ::umask(0777);
  const int bound = ::bind(listener->fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  const int bind_errno = errno;
  ::umask(old_umask);
  if (bound != 0) return ErrnoStatus(bind_errno, absl::StrCat("bind ", path));
  if (::chmod(path.c_str(), mode) != 0) return ErrnoStatus(errno, absl::StrCat("chmod ", path));
  if (::listen(listener->fd_, 128) != 0) return ErrnoStatus(errno, absl::StrCat("listen ", path));
  if (::pipe2(listener->wake_, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe");
  return listener;
}

UnixListener::~UnixListener() {
  Stop();
  for (int fd : {fd_, wake_[0], wake_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

absl::Status UnixListener::Start(grpc::Server* server) {
  try {
    thread_ = std::thread(&UnixListener::Accept, this, server);
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot start the thread accepting on ", path_, ": ", e.what()));
  }
  return absl::OkStatus();
}

void UnixListener::Stop() {
  if (thread_.joinable()) {
    (void)!::write(wake_[1], "x", 1);
    thread_.join();
    ::unlink(path_.c_str());
  }
}

void UnixListener::Accept(grpc::Server* server) {
  pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
  bool failing = false;  // accept has been failing since it last worked (logged once)
  for (;;) {
    // While accept fails for want of descriptors the connection stays pending and poll() returns at once:
    // wait a little (for Stop only) rather than spin.
    if (failing && ::poll(&fds[1], 1, kAcceptRetry.count()) > 0) return;
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      LogError("poll on %s: %s", path_, std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    // gRPC drives the connection with non-blocking I/O.
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      const int error = errno;
      if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
        if (!failing)
          LogWarning("accept on %s: %s; retrying every %d ms", path_, std::strerror(error), kAcceptRetry.count());
        failing = true;
      }
      continue;  // the others (the peer left first, a signal) concern that connection only
    }
    if (failing) LogInfo("accept on %s works again", path_);
    failing = false;
    PeerCredentials peer;
    ucred cred{};
    socklen_t length = sizeof(cred);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0) {
      peer = {true, cred.pid, cred.uid, cred.gid};
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      peers_[fd] = peer;  // a reused fd number replaces its closed predecessor
    }
    grpc::AddInsecureChannelFromFd(server, fd);  // gRPC owns the fd from here on
  }
}

PeerCredentials UnixListener::Lookup(const std::string& peer) const {
  int fd = -1;
  if (!absl::StartsWith(peer, "fd:") || !absl::SimpleAtoi(peer.substr(3), &fd)) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = peers_.find(fd);
  return it == peers_.end() ? PeerCredentials{} : it->second;
}

}  // namespace gnnd
