// MpsActive: only a control socket that accepts connections counts (its file outlives the daemon).
#include "server/mps.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

namespace gnnd {
namespace {

class MpsActiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gnnd-mps-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    setenv("CUDA_MPS_PIPE_DIRECTORY", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
    unsetenv("CUDA_MPS_PIPE_DIRECTORY");
    std::filesystem::remove_all(dir_);
  }
  // A Unix socket bound at DIR/control; listening or not.
  void BindControl(bool listen, int type = SOCK_STREAM) {
    fd_ = socket(AF_UNIX, type, 0);
    ASSERT_GE(fd_, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = dir_ + "/control";
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    ASSERT_EQ(bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
    if (listen) {
      ASSERT_EQ(::listen(fd_, 4), 0);
    }
  }

  std::string dir_;
  int fd_ = -1;
};

TEST_F(MpsActiveTest, NoControlSocketIsInactive) { EXPECT_FALSE(MpsActive()); }

TEST_F(MpsActiveTest, ListeningControlSocketIsActive) {
  BindControl(/*listen=*/true);
  EXPECT_TRUE(MpsActive());
}

TEST_F(MpsActiveTest, ListeningSeqpacketControlSocketIsActive) {
  BindControl(/*listen=*/true, SOCK_SEQPACKET);
  EXPECT_TRUE(MpsActive());
}

TEST_F(MpsActiveTest, SocketFileLeftByAQuitDaemonIsInactive) {
  BindControl(/*listen=*/true);
  close(fd_);  // the daemon quits; its socket file stays
  fd_ = -1;
  ASSERT_TRUE(std::filesystem::exists(dir_ + "/control"));
  EXPECT_FALSE(MpsActive());
}

TEST_F(MpsActiveTest, PlainFileIsInactive) {
  FILE* f = fopen((dir_ + "/control").c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  EXPECT_FALSE(MpsActive());
}

}  // namespace
}  // namespace gnnd
