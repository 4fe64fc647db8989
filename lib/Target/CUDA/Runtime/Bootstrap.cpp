//===- Bootstrap.cpp - world rank, size and the NCCL unique id ------------===//

#include "Bootstrap.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace dtensor::rt::cuda {

namespace {

const char *getEnv(const char *name) {
  const char *value = std::getenv(name);
  return value && *value ? value : nullptr;
}

bool parseInt(const char *name, const char *text, int64_t &value,
              std::string &error) {
  char *end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(text, &end, 10);
  if (errno || end == text || *end) {
    error = std::string(name) + "='" + text + "' is not an integer";
    return false;
  }
  value = parsed;
  return true;
}

struct Launcher {
  const char *name;
  const char *rank;
  const char *size;
  const char *localRank;
};

constexpr Launcher kLaunchers[] = {
    {"dtensor", "DTENSOR_RANK", "DTENSOR_WORLD_SIZE", "DTENSOR_LOCAL_RANK"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

using Clock = std::chrono::steady_clock;

double secondsLeft(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

/// Waits for `events` on `fd` until the deadline; false on timeout.
bool waitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    double left = secondsLeft(deadline);
    if (left <= 0)
      return false;
    pollfd p{fd, events, 0};
    int ms = static_cast<int>(left * 1000) + 1;
    int r = ::poll(&p, 1, ms);
    if (r > 0)
      return true;
    if (r == 0)
      return false;
    if (errno != EINTR)
      return false;
  }
}

bool sendAll(int fd, const void *data, size_t bytes,
             Clock::time_point deadline) {
  const char *p = static_cast<const char *>(data);
  while (bytes) {
    if (!waitFor(fd, POLLOUT, deadline))
      return false;
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      return false;
    p += n;
    bytes -= n;
  }
  return true;
}

bool recvAll(int fd, void *data, size_t bytes, Clock::time_point deadline) {
  char *p = static_cast<char *>(data);
  while (bytes) {
    if (!waitFor(fd, POLLIN, deadline))
      return false;
    ssize_t n = ::recv(fd, p, bytes, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      return false;
    p += n;
    bytes -= n;
  }
  return true;
}

constexpr uint32_t kHelloMagic = 0x64745242; // "dtRB"

struct Hello {
  uint32_t magic;
  uint32_t pad;
  int64_t rank;
  int64_t worldSize;
};

std::string endpoint(const LaunchEnv &env) {
  return env.masterAddr + ":" + std::to_string(env.port);
}

bool resolve(const LaunchEnv &env, sockaddr_storage &addr, socklen_t &len,
             std::string &error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *result = nullptr;
  std::string port = std::to_string(env.port);
  int rc = ::getaddrinfo(env.masterAddr.c_str(), port.c_str(), &hints, &result);
  if (rc != 0 || !result) {
    error = "cannot resolve rendezvous address " + endpoint(env) + ": " +
            ::gai_strerror(rc);
    return false;
  }
  std::memcpy(&addr, result->ai_addr, result->ai_addrlen);
  len = result->ai_addrlen;
  ::freeaddrinfo(result);
  return true;
}

bool serve(const LaunchEnv &env, const void *data, size_t bytes,
           Clock::time_point deadline, std::string &error) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (!resolve(env, addr, len, error))
    return false;
  // Listen on every interface at the port: MASTER_ADDR names this host as
  // the others see it, which need not be an address of one of its
  // interfaces (NAT, DNS aliases).
  int family = addr.ss_family;
  int fd = ::socket(family, SOCK_STREAM, 0);
  if (fd < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage any{};
  socklen_t anyLen;
  if (family == AF_INET6) {
    auto *a6 = reinterpret_cast<sockaddr_in6 *>(&any);
    a6->sin6_family = AF_INET6;
    a6->sin6_addr = in6addr_any;
    a6->sin6_port = htons(env.port);
    anyLen = sizeof(sockaddr_in6);
  } else {
    auto *a4 = reinterpret_cast<sockaddr_in *>(&any);
    a4->sin_family = AF_INET;
    a4->sin_addr.s_addr = htonl(INADDR_ANY);
    a4->sin_port = htons(env.port);
    anyLen = sizeof(sockaddr_in);
  }
  if (::bind(fd, reinterpret_cast<sockaddr *>(&any), anyLen) != 0 ||
      ::listen(fd, 128) != 0) {
    error = "rank 0 cannot listen on port " + std::to_string(env.port) +
            " for the rendezvous: " + std::strerror(errno) +
            " (set DTENSOR_MASTER_PORT to a free port)";
    ::close(fd);
    return false;
  }
  std::vector<bool> joined(env.worldSize, false);
  joined[0] = true;
  int64_t missing = env.worldSize - 1;
  while (missing > 0) {
    if (!waitFor(fd, POLLIN, deadline)) {
      std::string ranks;
      for (int64_t r = 0; r < env.worldSize; ++r)
        if (!joined[r])
          ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
      error = "rendezvous on " + endpoint(env) + ": timed out after " +
              std::to_string(static_cast<int>(env.rendezvousTimeout)) +
              " s waiting for rank(s) " + ranks +
              " (DTENSOR_RENDEZVOUS_TIMEOUT)";
      ::close(fd);
      return false;
    }
    int peer = ::accept(fd, nullptr, nullptr);
    if (peer < 0)
      continue;
    Hello hello{};
    bool ok = recvAll(peer, &hello, sizeof(hello), deadline);
    if (!ok || hello.magic != kHelloMagic) {
      ::close(peer); // not one of ours (a port scanner, a stale job)
      continue;
    }
    if (hello.worldSize != env.worldSize || hello.rank <= 0 ||
        hello.rank >= env.worldSize || joined[hello.rank]) {
      error =
          "rendezvous on " + endpoint(env) + ": a peer claims rank " +
          std::to_string(hello.rank) + " of world size " +
          std::to_string(hello.worldSize) + ", this job has " +
          std::to_string(env.worldSize) +
          (hello.rank > 0 && hello.rank < env.worldSize && joined[hello.rank]
               ? " and that rank already joined"
               : "") +
          " (two jobs on one port?)";
      ::close(peer);
      ::close(fd);
      return false;
    }
    if (!sendAll(peer, data, bytes, deadline)) {
      error = "rendezvous on " + endpoint(env) + ": sending the NCCL id to " +
              "rank " + std::to_string(hello.rank) + " failed";
      ::close(peer);
      ::close(fd);
      return false;
    }
    ::close(peer);
    joined[hello.rank] = true;
    --missing;
  }
  ::close(fd);
  return true;
}

bool join(const LaunchEnv &env, void *data, size_t bytes,
          Clock::time_point deadline, std::string &error) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (!resolve(env, addr, len, error))
    return false;
  std::string lastError = "no attempt";
  while (secondsLeft(deadline) > 0) {
    int fd = ::socket(addr.ss_family, SOCK_STREAM, 0);
    if (fd < 0) {
      error = std::string("socket: ") + std::strerror(errno);
      return false;
    }
    int flags = ::fcntl(fd, F_GETFL, 0);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int rc = ::connect(fd, reinterpret_cast<sockaddr *>(&addr), len);
    bool connected = rc == 0;
    if (!connected && errno == EINPROGRESS) {
      auto attempt = std::min(deadline, Clock::now() + std::chrono::seconds(2));
      if (waitFor(fd, POLLOUT, attempt)) {
        int soError = 0;
        socklen_t soLen = sizeof(soError);
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &soLen);
        connected = soError == 0;
        if (!connected)
          lastError = std::strerror(soError);
      } else {
        lastError = "connect timed out";
      }
    } else if (!connected) {
      lastError = std::strerror(errno);
    }
    if (connected) {
      Hello hello{kHelloMagic, 0, env.rank, env.worldSize};
      if (sendAll(fd, &hello, sizeof(hello), deadline) &&
          recvAll(fd, data, bytes, deadline)) {
        ::close(fd);
        return true;
      }
      lastError = "rank 0 closed the connection before sending the NCCL id";
    }
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  error = "rendezvous: cannot reach rank 0 at " + endpoint(env) + " within " +
          std::to_string(static_cast<int>(env.rendezvousTimeout)) +
          " s (last error: " + lastError +
          "; check DTENSOR_MASTER_ADDR/DTENSOR_MASTER_PORT and that rank 0 "
          "started)";
  return false;
}

} // namespace

bool readLaunchEnv(LaunchEnv &env, std::string &error) {
  env = LaunchEnv();
  for (const Launcher &l : kLaunchers) {
    const char *rank = getEnv(l.rank);
    if (!rank)
      continue;
    env.launcher = l.name;
    if (!parseInt(l.rank, rank, env.rank, error))
      return false;
    const char *size = getEnv(l.size);
    if (!size) {
      error = std::string(l.rank) + " is set but " + l.size + " is not";
      return false;
    }
    if (!parseInt(l.size, size, env.worldSize, error))
      return false;
    env.localRank = env.rank;
    if (const char *local = getEnv(l.localRank))
      if (!parseInt(l.localRank, local, env.localRank, error))
        return false;
    break;
  }
  if (env.worldSize < 1 || env.rank < 0 || env.rank >= env.worldSize) {
    error = "rank " + std::to_string(env.rank) + " is not in 0.." +
            std::to_string(env.worldSize - 1) + " (from the " + env.launcher +
            " launcher's variables)";
    return false;
  }
  if (env.localRank < 0) {
    error = "negative local rank " + std::to_string(env.localRank);
    return false;
  }
  if (const char *addr = getEnv("DTENSOR_MASTER_ADDR"))
    env.masterAddr = addr;
  else if (const char *addr = getEnv("MASTER_ADDR"))
    env.masterAddr = addr;
  int64_t port = 29511;
  if (const char *p = getEnv("DTENSOR_MASTER_PORT")) {
    if (!parseInt("DTENSOR_MASTER_PORT", p, port, error))
      return false;
  } else if (const char *p = getEnv("MASTER_PORT")) {
    if (!parseInt("MASTER_PORT", p, port, error))
      return false;
    ++port;
  }
  if (port < 1 || port > 65535) {
    error = "rendezvous port " + std::to_string(port) + " is not in 1..65535";
    return false;
  }
  env.port = static_cast<int>(port);
  if (const char *t = getEnv("DTENSOR_RENDEZVOUS_TIMEOUT")) {
    char *end = nullptr;
    double seconds = std::strtod(t, &end);
    if (end == t || *end || !(seconds > 0)) {
      error = std::string("DTENSOR_RENDEZVOUS_TIMEOUT='") + t +
              "' is not a positive number of seconds";
      return false;
    }
    env.rendezvousTimeout = seconds;
  }
  if (const char *test = getEnv("DTENSOR_SINGLE_GPU_TEST"))
    env.singleGpuTest = std::string(test) == "1";
  return true;
}

bool exchangeUniqueId(const LaunchEnv &env, void *data, size_t bytes,
                      std::string &error) {
  if (env.worldSize == 1)
    return true;
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(
                                     env.rendezvousTimeout * 1000));
  if (env.rank == 0)
    return serve(env, data, bytes, deadline, error);
  return join(env, data, bytes, deadline, error);
}

} // namespace dtensor::rt::cuda
