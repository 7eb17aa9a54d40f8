#include "server/mps.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace gnnd {

bool MpsActive() {
  // The socket file outlives `quit`, so only a connection proves a daemon runs (the CUDA driver decides the
  // same way when it creates a context).
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string control = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp/nvidia-mps") + "/control";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (control.size() >= sizeof(address.sun_path)) return false;
  std::memcpy(address.sun_path, control.c_str(), control.size() + 1);
  // The daemon listens with SOCK_SEQPACKET (driver 580); SOCK_STREAM is tried too. A type mismatch fails with
  // EPROTOTYPE, a stale file with ECONNREFUSED.
  for (const int type : {SOCK_SEQPACKET, SOCK_STREAM}) {
    const int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const bool connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
    ::close(fd);
    if (connected) return true;
  }
  return false;
}

}  // namespace gnnd
