// Who is at the other end of a connection: read with SO_PEERCRED when gnnd accepts on its Unix socket
// (server/unix_listener.h); unknown over TCP, which carries no identity.
#pragma once

#include <sys/types.h>

namespace gnnd {

struct PeerCredentials {
  bool known = false;  // false over TCP
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

}  // namespace gnnd
