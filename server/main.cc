// gnnd: loads datasets into shared memory once and serves minibatches to trainer processes.
//   gnnd [--config FILE] [--listen unix:/path/gnnd.sock | host:port] [--dataset NAME=DIR ...]
//        [--feature-cache NAME=SIZE ...]
// The config file is a text-format DaemonConfig (proto/gnnd/v1/config.proto); flags override it.
// SIGTERM/SIGINT: sessions are told, the socket closes, segments gnnd created are removed.
#include <malloc.h>
#include <signal.h>
#include <systemd/sd-daemon.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/base/flags.h"
#include "common/base/limits.h"
#include "common/base/log.h"
#include "common/base/parallel.h"
#include "common/base/status.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "server/config.h"
#include "server/configured_datasets.h"
#include "server/dataset_registry.h"
#include "server/instance_lock.h"
#include "server/metrics_server.h"
#include "server/peers/peer_network.h"
#include "server/prometheus.h"
#include "server/service.h"
#include "server/sessions/slot_segment.h"
#include "server/unix_listener.h"

ABSL_FLAG(std::string, config, "", "daemon config file (text-format gnnd.v1.DaemonConfig)");
ABSL_FLAG(std::string, listen, "", "unix:/path/to/gnnd.sock (default unix:/tmp/gnnd.sock) or host:port for TCP");
ABSL_FLAG(std::string, instance, "",
          "this gnnd's instance name, when several share a host (default: from the socket's name; overrides the "
          "config)");
ABSL_FLAG(std::vector<std::string>, dataset, {}, "NAME=DATASET_DIR to load at start (repeatable)");
ABSL_FLAG(std::vector<std::string>, feature_cache, {},
          "NAME=SIZE: dataset NAME's features stay on storage behind a host cache of SIZE (2GiB; repeatable)");
ABSL_FLAG(std::vector<std::string>, dataset_roots, {},
          "directories under which `gnnctl load` may load datasets (comma-separated; added to the config's "
          "dataset_roots; relative ones from gnnd's working directory)");
ABSL_FLAG(bool, huge_pages, false, "back the --dataset segments with 2 MiB transparent huge pages");
ABSL_FLAG(bool, keep_segments, false, "leave dataset segments in /dev/shm at exit (a restart attaches to them)");
ABSL_FLAG(bool, exit_after_load, false, "load the datasets, print their summaries and exit");
ABSL_FLAG(std::string, producer_sms, "", "GPU producers' SMs: N, auto, or 0 for the whole GPU (overrides the config)");
ABSL_FLAG(std::string, metrics_address, "", "HOST:PORT for Prometheus metrics at /metrics (overrides the config)");
ABSL_FLAG(std::string, prepare_gpus, "",
          "GPUs to prepare datasets for at load: all, none or 0,1 (overrides the config)");
ABSL_FLAG(std::string, gpu_cache, "",
          "GPU memory per GPU for each dataset's hot tier: auto, none, 20GiB or 25% (overrides the config)");
ABSL_FLAG(
    std::vector<std::string>, peers, {},
    "HOST:PORT,HOST:PORT,...: the gnnd serving each part of a partitioned dataset, by part (overrides the config)");
ABSL_FLAG(std::string, peer_listen, "", "HOST:PORT where this part listens for its peers, if not its --peers entry");
ABSL_FLAG(std::string, peer_token_file, "", "the peers' shared secret (a file of mode 0600; overrides the config)");
ABSL_FLAG(std::string, peer_timeout, "", "how long a peer may take to answer (10s; overrides the config)");
ABSL_FLAG(bool, peer_shared_memory, false,
          "let parts' gnnd on one host move rows through shared memory (a dead peer is then found by the timeout)");
ABSL_FLAG(std::string, remote_cache, "",
          "host memory for rows fetched from peers, kept for later batches: 2GiB (default 0: none; overrides the "
          "config)");
ABSL_FLAG(std::string, producer, "",
          "where CUDA sessions' batches are made unless the trainer says: sm (GPU kernels), host_gather (sampled "
          "on the GPU, rows gathered by gnnd's producer threads), host (made by gnnd's producer threads) or auto "
          "(default: host_gather or sm, whichever the trainer takes batches from faster); overrides the config");
ABSL_FLAG(int, threads, 0, "threads for loading and for the CPU producers' shared pool: 1 to 1024 (0: all cores)");

namespace gnnd {
namespace {

// The values of a flag that may repeat (absl keeps only the last occurrence), each split at commas.
std::vector<std::string> RepeatedFlag(int argc, char** argv, absl::string_view flag) {
  std::vector<std::string> values;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    absl::string_view value;
    if (arg == flag && i + 1 < argc) {
      value = argv[i + 1];
    } else if (absl::StartsWith(arg, flag) && arg.size() > flag.size() && arg[flag.size()] == '=') {
      value = arg.substr(flag.size() + 1);
    } else {
      continue;
    }
    for (absl::string_view item : absl::StrSplit(value, ',', absl::SkipEmpty())) values.emplace_back(item);
  }
  return values;
}

// NAME=VALUE, both non-empty.
absl::StatusOr<std::pair<std::string, std::string>> NameValue(absl::string_view flag, absl::string_view item,
                                                              absl::string_view expected) {
  const size_t eq = item.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq + 1 == item.size()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", item, ": expected ", expected));
  }
  return std::make_pair(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
}

// --dataset NAME=DIR and --feature-cache NAME=SIZE (for a dataset of the config or of --dataset).
absl::Status CollectDatasetFlags(int argc, char** argv, v1::DaemonConfig& config) {
  for (const std::string& item : RepeatedFlag(argc, argv, "--dataset")) {
    GNND_ASSIGN_OR_RETURN(const auto name_dir, NameValue("--dataset", item, "NAME=DATASET_DIR"));
    v1::DatasetConfig* d = config.add_datasets();
    d->set_name(name_dir.first);
    d->set_path(name_dir.second);
    d->set_huge_pages(absl::GetFlag(FLAGS_huge_pages));
  }
  for (const std::string& item : RepeatedFlag(argc, argv, "--feature_cache") /* NormalizeFlagNames spelling */) {
    GNND_ASSIGN_OR_RETURN(const auto name_size, NameValue("--feature-cache", item, "NAME=SIZE (2GiB)"));
    auto it = std::find_if(config.mutable_datasets()->begin(), config.mutable_datasets()->end(),
                           [&](const v1::DatasetConfig& d) { return d.name() == name_size.first; });
    if (it == config.mutable_datasets()->end()) {
      return absl::InvalidArgumentError(absl::StrCat("--feature-cache ", item, ": no dataset '", name_size.first,
                                                     "' (from the config or --dataset)"));
    }
    it->set_feature_cache(name_size.second);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::DaemonConfig> BuildConfig(int argc, char** argv) {
  v1::DaemonConfig config;
  if (!absl::GetFlag(FLAGS_config).empty()) {
    GNND_ASSIGN_OR_RETURN(config, ReadDaemonConfig(absl::GetFlag(FLAGS_config)));
  }
  if (!absl::GetFlag(FLAGS_listen).empty()) config.set_listen(absl::GetFlag(FLAGS_listen));
  if (!absl::GetFlag(FLAGS_instance).empty()) config.set_instance(absl::GetFlag(FLAGS_instance));
  if (absl::GetFlag(FLAGS_keep_segments)) config.set_keep_segments(true);
  for (const std::string& root : absl::GetFlag(FLAGS_dataset_roots)) {
    if (root.empty()) return absl::InvalidArgumentError("--dataset-roots: an empty directory name");
    std::error_code error;
    const std::filesystem::path absolute = std::filesystem::absolute(root, error);
    if (error) return absl::InvalidArgumentError(absl::StrCat("--dataset-roots ", root, ": ", error.message()));
    config.add_dataset_roots(absolute.lexically_normal().string());
  }
  if (!absl::GetFlag(FLAGS_prepare_gpus).empty()) config.set_prepare_gpus(absl::GetFlag(FLAGS_prepare_gpus));
  if (!absl::GetFlag(FLAGS_gpu_cache).empty()) config.set_gpu_cache(absl::GetFlag(FLAGS_gpu_cache));
  if (!absl::GetFlag(FLAGS_metrics_address).empty()) config.set_metrics_address(absl::GetFlag(FLAGS_metrics_address));
  if (!absl::GetFlag(FLAGS_peers).empty()) {
    config.clear_peers();
    for (const std::string& peer : absl::GetFlag(FLAGS_peers)) config.add_peers(peer);
  }
  if (!absl::GetFlag(FLAGS_peer_listen).empty()) config.set_peer_listen(absl::GetFlag(FLAGS_peer_listen));
  if (!absl::GetFlag(FLAGS_peer_token_file).empty()) config.set_peer_token_file(absl::GetFlag(FLAGS_peer_token_file));
  if (!absl::GetFlag(FLAGS_peer_timeout).empty()) config.set_peer_timeout(absl::GetFlag(FLAGS_peer_timeout));
  if (absl::GetFlag(FLAGS_peer_shared_memory)) config.set_peer_shared_memory(true);
  if (!absl::GetFlag(FLAGS_remote_cache).empty()) config.set_remote_cache(absl::GetFlag(FLAGS_remote_cache));
  if (!absl::GetFlag(FLAGS_producer).empty()) config.set_producer(absl::GetFlag(FLAGS_producer));
  if (const int threads = absl::GetFlag(FLAGS_threads); threads != 0) {
    if (threads < 0 || threads > kMaxThreads) {
      return absl::InvalidArgumentError(
          absl::StrCat("--threads ", threads, " (must be 1 to ", kMaxThreads, ", or 0 for every core)"));
    }
    config.set_producer_threads(threads);
  }
  if (const std::string sms = absl::GetFlag(FLAGS_producer_sms); !sms.empty()) {
    int value = -1;
    if (sms != "auto" && !absl::SimpleAtoi(sms, &value)) {
      return absl::InvalidArgumentError(absl::StrCat("--producer-sms ", sms, ": a number of SMs, or auto"));
    }
    config.set_producer_sms(value);
  }
  GNND_RETURN_IF_ERROR(CollectDatasetFlags(argc, argv, config));
  GNND_RETURN_IF_ERROR(FinishDaemonConfig(config));
  if (config.producer_threads() == 0) config.set_producer_threads(std::min(DefaultThreads(), kMaxThreads));
  return config;
}

// SIGHUP: re-reads the config (file and flags) and brings the configured datasets in step; the other
// settings take effect at the next start.
void Reload(int argc, char** argv, ConfiguredDatasets& configured) {
  sd_notify(0, "RELOADING=1");
  const absl::StatusOr<v1::DaemonConfig> config = BuildConfig(argc, argv);
  if (!config.ok()) {
    LogError("reload: %s (the dataset list is unchanged)", config.status().message());
  } else {
    const ConfiguredDatasets::Outcome outcome = configured.Apply(config->datasets());
    for (const std::string& error : outcome.errors) LogError("reload: %s", error);
    LogEvent(LogLevel::kInfo, "reload",
             {{"loaded", absl::StrJoin(outcome.loaded, ",")},
              {"unloaded", absl::StrJoin(outcome.unloaded, ",")},
              {"errors", absl::StrCat(outcome.errors.size())}},
             "reload: %d dataset(s) loaded, %d unloaded, %d unchanged, %d error(s)", outcome.loaded.size(),
             outcome.unloaded.size(), outcome.unchanged.size(), outcome.errors.size());
  }
  sd_notify(0, "READY=1");
}

// Until gnnd serves, the main thread does not wait for signals: SIGTERM or SIGINT during start-up (a long
// load, say) cancels what start-up is doing, which then ends with nothing left behind; if it has not ended
// within kGrace (a stuck filesystem), gnnd exits at once. Serving() hands the signals to the main thread.
class StartupSignals {
 public:
  static constexpr absl::Duration kGrace = absl::Seconds(10);

  explicit StartupSignals(const sigset_t& signals) : signals_(signals) {
    sigdelset(&signals_, SIGHUP);  // a reload before serving waits
    watcher_ = std::thread([this] { Watch(); });
  }
  ~StartupSignals() { Serving(); }
  // What a signal during start-up does first (cancel loads).
  void OnSignal(std::function<void()> cancel) {
    std::lock_guard<std::mutex> lock(mutex_);
    cancel_ = std::move(cancel);
  }
  bool signalled() const { return signal_.load() != 0; }
  int signal() const { return signal_.load(); }
  void Serving() {
    ended_.store(true);
    if (watcher_.joinable()) watcher_.join();
  }

 private:
  void Watch() {
    const timespec tick{0, 50'000'000};
    absl::Time deadline = absl::InfiniteFuture();
    while (!ended_.load()) {
      if (absl::Now() > deadline) {
        LogError("start-up did not stop within %s of signal %d: exiting", absl::FormatDuration(kGrace), signal_.load());
        std::_Exit(1);
      }
      const int signal = sigtimedwait(&signals_, nullptr, &tick);
      if (signal <= 0 || signalled()) continue;
      LogWarning("signal %d during start-up: stopping before serving", signal);
      signal_.store(signal);
      deadline = absl::Now() + kGrace;
      std::lock_guard<std::mutex> lock(mutex_);
      if (cancel_) cancel_();
    }
  }

  sigset_t signals_;
  std::atomic<bool> ended_{false};
  std::atomic<int> signal_{0};
  std::mutex mutex_;
  std::function<void()> cancel_;
  std::thread watcher_;
};

int Run(int argc, char** argv) {
  NormalizeFlagNames(argc, argv);
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<v1::DaemonConfig> config = BuildConfig(argc, argv);
  if (!config.ok()) {
    LogError("%s", config.status().message());
    return 2;
  }
  PreparePeerEnvironment();  // changes the environment: before any thread starts
  // Block the shutdown signals before any thread starts; the main thread waits for them.
  sigset_t shutdown;
  sigemptyset(&shutdown);
  sigaddset(&shutdown, SIGINT);
  sigaddset(&shutdown, SIGTERM);
  sigaddset(&shutdown, SIGHUP);  // reload
  pthread_sigmask(SIG_BLOCK, &shutdown, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  StartupSignals startup(shutdown);
  // A session's large buffers (look-ahead rings, request copies) come from and go back to the kernel
  // whole: with glibc's sliding threshold they would stay in the heap after the session ends.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);

  absl::StatusOr<std::unique_ptr<InstanceLock>> instance = InstanceLock::Acquire(config->instance());
  if (!instance.ok()) {
    LogError("%s", instance.status().message());
    return 1;
  }
  SlotSegment::RemoveStale();
  absl::StatusOr<std::unique_ptr<SlotBackends>> made_backends =
      SlotBackends::Create({.producer_threads = config->producer_threads(),
                            .gpu_csc_in_host_memory = config->gpu_csc_in_host_memory(),
                            .producer_sms = config->producer_sms(),
                            .prepare_gpus = *ParsePrepareGpus(config->prepare_gpus()),
                            .gpu_cache = *ParseGpuCache(config->gpu_cache()),
                            .instance = config->instance()});
  if (!made_backends.ok()) {
    LogError("%s", made_backends.status().message());
    return 1;
  }
  SlotBackends& backends = **made_backends;
  DatasetRegistry registry(
      config->keep_segments(), config->producer_threads(),
      [&backends](const LoadedDataset& dataset) { backends.Forget(dataset); },
      [&backends](const LoadedDataset& dataset) { backends.Prepare(dataset); }, config->instance());
  if (config->peers_size() > 0) {
    absl::StatusOr<std::string> token = ReadPeerToken(config->peer_token_file());
    if (!token.ok()) {
      LogError("%s", token.status().message());
      return 2;
    }
    registry.ServePartsWith({.peers = {config->peers().begin(), config->peers().end()},
                             .listen = config->peer_listen(),
                             .token = *std::move(token),
                             .timeout = *ParsePeerTimeout(config->peer_timeout()),
                             .shared_memory = config->peer_shared_memory(),
                             .remote_cache_bytes = *ParseRemoteCache(config->remote_cache())});
  }
  startup.OnSignal([&registry] { registry.CancelLoads(); });
  ConfiguredDatasets configured(registry);
  const ConfiguredDatasets::Outcome loaded = configured.Apply(config->datasets());
  if (startup.signalled()) {
    registry.UnloadAll();
    LogInfo("signal %d: stopped before serving", startup.signal());
    return 1;
  }
  if (!loaded.errors.empty()) {
    for (const std::string& error : loaded.errors) LogError("%s", error);
    registry.UnloadAll();
    return 1;
  }
  if (absl::GetFlag(FLAGS_exit_after_load)) {
    registry.UnloadAll();
    return 0;
  }

  const ListenAddress address = *ParseListenAddress(config->listen());
  std::unique_ptr<UnixListener> listener;
  if (address.unix_socket) {
    absl::StatusOr<std::unique_ptr<UnixListener>> bound = UnixListener::Bind(address.path, config->socket_mode());
    if (!bound.ok()) {
      LogError("%s", bound.status().message());
      registry.UnloadAll();
      return 1;
    }
    listener = std::move(*bound);
  }
  absl::StatusOr<std::unique_ptr<GnndService>> made_service =
      GnndService::Create(*config, &registry, &backends, listener.get());
  if (!made_service.ok()) {
    LogError("%s", made_service.status().message());
    registry.UnloadAll();
    return 1;
  }
  GnndService& service = **made_service;
  std::unique_ptr<MetricsServer> metrics;
  if (!config->metrics_address().empty()) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> started = MetricsServer::Start(
        config->metrics_address(), [&service] { return RenderPrometheus(service.CollectStats()); });
    if (!started.ok()) {
      LogError("%s", started.status().message());
      registry.UnloadAll();
      return 1;
    }
    metrics = std::move(*started);
    LogInfo("metrics at http://%s/metrics (port %d)", config->metrics_address(), metrics->port());
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(kMaxOpenRequestBytes);  // an open request may carry 8 M seed ids and times
  int tcp_port = 0;
  if (!address.unix_socket) builder.AddListeningPort(address.target, grpc::InsecureServerCredentials(), &tcp_port);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || (!address.unix_socket && tcp_port == 0)) {
    LogError("cannot serve on %s", config->listen());
    registry.UnloadAll();
    return 1;
  }
  if (listener) {
    if (absl::Status started = listener->Start(server.get()); !started.ok()) {
      LogError("%s", started.message());
      server->Shutdown();
      registry.UnloadAll();
      return 1;
    }
  }
  // Where it listens, with the port bound (a configured port 0 picks one).
  const std::string listening = address.unix_socket
                                    ? config->listen()
                                    : absl::StrCat(address.target.substr(0, address.target.rfind(':')), ":", tcp_port);
  if (!address.unix_socket)
    LogWarning("serving over TCP (%s): peers are not identified, use a Unix socket where you can", listening);
  LogEvent(
      LogLevel::kInfo, "serving",
      {{"listen", listening}, {"instance", config->instance()}, {"datasets", absl::StrCat(config->datasets_size())}},
      "gnnd (instance %s) serving %d dataset(s) on %s", config->instance(), config->datasets_size(), listening);

  // Under systemd (Type=notify): ready once the configured datasets are in memory and the socket serves.
  sd_notifyf(0, "READY=1\nSTATUS=serving %d dataset(s) on %s", config->datasets_size(), listening.c_str());
  startup.Serving();
  int signal = startup.signal();  // one that came after the loads, before serving, is not lost
  if (signal == 0) {
    while (sigwait(&shutdown, &signal) == 0 && signal == SIGHUP) Reload(argc, argv, configured);
  }
  sd_notify(0, "STOPPING=1");
  LogInfo("signal %d: shutting down", signal);
  server->GetHealthCheckService()->SetServingStatus(false);
  service.StopSessions();
  if (listener) listener->Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server->Wait();
  service.WaitForStreamTasks();  // a teardown's Finish may still read the server
  registry.UnloadAll();
  LogEvent(LogLevel::kInfo, "stopped", {}, "gnnd stopped");
  return 0;
}

}  // namespace
}  // namespace gnnd

int main(int argc, char** argv) {
  // --help lists gnnd's own flags (the libraries' are under --helpfull).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) { return absl::EndsWith(file, "server/main.cc"); };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  absl::SetProgramUsageMessage(
      "gnnd [--config FILE] [--listen unix:/path/gnnd.sock | host:port] [--dataset NAME=DIR ...] [--keep-segments]");
  return gnnd::Run(argc, argv);
}
