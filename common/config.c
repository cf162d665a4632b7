/* config.c — the settings table and its parser; see config.h.
 *
 * Every setting is one row of s_rows: adding a setting is adding a field to
 * cr_config_t and a row here, and parsing, environment overrides, --help,
 * the config dump and tests/test_config.c all follow. Text settings with a
 * closed set of values are checked by s_check_text, keyed by the row name. */
#include "config.h"

#include "error.h"
#include "log.h"
#include "reward.h"

#include <ctype.h>
#include <stdarg.h>
#include <strings.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ROW(name, type, field, def, lo, hi, cmds, help)                                     \
    {name, type, offsetof(cr_config_t, field), def, lo, hi, cmds, help}

/* Commands that take job options: they become the batch defaults. */
#define JOBOPT (CR_CMD_SUBMIT | CR_CMD_RUN | CR_CMD_WORKER | CR_CMD_COORDINATOR | CR_CMD_GATEWAY | \
                CR_CMD_ROLLOUT | CR_CMD_CURATE)
/* Commands that judge through a cluster they reach or start themselves. */
#define DRIVER (CR_CMD_ROLLOUT | CR_CMD_CURATE)
/* Commands that start or are local cluster processes. */
#define CLUSTER (CR_CMD_COORDINATOR | CR_CMD_WORKER | CR_CMD_RUN)

const cr_conf_row_t cr_config_rows[] = {
    /* endpoints */
    ROW("clients-endpoint", CR_CONF_STR, clients_endpoint, "tcp://127.0.0.1:5555", 1, 0,
        CR_CMD_COORDINATOR | CR_CMD_CLIENT | CR_CMD_GATEWAY,
        "ZeroMQ endpoint for clients: the coordinator binds it, clients connect (ipc:// takes "
        "a path, made 0600; abstract ipc://@name is refused)"),
    ROW("workers-endpoint", CR_CONF_STR, workers_endpoint, "tcp://127.0.0.1:5556", 1, 0,
        CR_CMD_COORDINATOR | CR_CMD_WORKER,
        "ZeroMQ endpoint for workers: the coordinator binds it, workers connect"),
    /* coordinator */
    ROW("db", CR_CONF_STR, db, "crucible.db", 1, 0, CR_CMD_COORDINATOR,
        "SQLite file holding batches, jobs and results"),
    ROW("queue-limit", CR_CONF_INT, queue_limit, "100000", 1, 1e9, CR_CMD_COORDINATOR,
        "jobs one client may have queued; a larger submit is refused whole"),
    ROW("max-attempts", CR_CONF_INT, max_attempts, "3", 1, 100,
        CR_CMD_COORDINATOR | CR_CMD_SUBMIT | CR_CMD_RUN | CR_CMD_GATEWAY | DRIVER,
        "tries of a job before it is recorded INFRA_ERROR"),
    ROW("heartbeat-ms", CR_CONF_INT, heartbeat_ms, "1000", 10, 600000,
        CLUSTER | DRIVER | CR_CMD_SUBMIT | CR_CMD_WATCH | CR_CMD_RESULTS | CR_CMD_REPORT | CR_CMD_GATEWAY,
        "milliseconds between heartbeats, both ways (clients: the coordinator's)"),
    ROW("liveness", CR_CONF_INT, liveness, "3", 1, 100,
        CLUSTER | DRIVER | CR_CMD_SUBMIT | CR_CMD_WATCH | CR_CMD_RESULTS | CR_CMD_REPORT | CR_CMD_GATEWAY,
        "missed heartbeats before a peer is declared lost (clients: then reconnect)"),
    ROW("drain-after", CR_CONF_INT, drain_after, "3", 0, 16, CR_CMD_COORDINATOR,
        "drain a worker (no new jobs) lost this many times in 10 minutes, or whose runs "
        "ended INFRA_ERROR this many times in a row, unless it is the last healthy worker of "
        "its backend; 0 = never"),
    /* 0: (compile-timeout-s + run-timeout-s) of the job's batch times the holder's credit
     * (its jobs queue behind each other), plus a minute: an honest worker never runs out */
    ROW("lease-s", CR_CONF_DOUBLE, lease_s, "0", 0, 1e6, CR_CMD_COORDINATOR,
        "seconds a worker may hold an assigned job; then the job is requeued (attempt + 1) and "
        "the worker told to cancel it; 0 = (compile-timeout-s + run-timeout-s) x the worker's "
        "credit + 60"),
    /* 64: ten times a default worker's credit (2 x compile-jobs + 2); 1024 is the scheduler's cap */
    ROW("max-credit", CR_CONF_INT, max_credit, "64", 1, 1024, CR_CMD_COORDINATOR,
        "jobs one worker may hold at once; a worker claiming more credit is clamped to this"),
    /* full: the WAL is synced at every commit, and nothing is acknowledged to a worker or
     * streamed to a client before its turn commits, so an acknowledged record survives a
     * power cut; normal: synced at checkpoints (a crash of the process loses nothing, a
     * power cut the last turns); off: the OS decides */
    ROW("durability", CR_CONF_STR, durability, "full", 1, 0, CR_CMD_COORDINATOR,
        "full, normal or off: what an acknowledged record survives (full: a power cut; "
        "normal: a crash of the coordinator; off: nothing promised)"),
    /* 2000: what one Submit's decoding may cost the loop (a Submit is then stored in
     * steps over several turns, coordinator.c's intake, each inside the loop's 50 ms
     * bound: bench/RESULTS.md); `crucible submit` sends larger batches in Submits of
     * CR_CLI_SUBMIT_CHUNK jobs */
    ROW("max-submit-jobs", CR_CONF_INT, max_submit_jobs, "2000", 1, 1000000,
        CR_CMD_COORDINATOR,
        "jobs one Submit may carry; a larger one is refused whole with E_LIMIT (send the batch "
        "in several Submits of the same batch id)"),
    /* worker */
    ROW("worker-id", CR_CONF_STR, worker_id, "", 1, 0, CR_CMD_WORKER,
        "worker id and ZeroMQ routing id; empty = <host>-<pid>; under CURVE the coordinator "
        "binds it to this worker's key for good"),
    ROW("work-dir", CR_CONF_STR, work_dir, "", 1, 0, CR_CMD_WORKER,
        "private directory (owned by the worker, mode 0700) for build dirs, the compile cache "
        "and runner scratch; empty = /var/lib/crucible as root, else "
        "$XDG_CACHE_HOME/crucible or ~/.cache/crucible (docs/security.md)"),
    /* 2 GiB: thousands of C objects or hundreds of CUDA ones, on any disk */
    ROW("cache-bytes", CR_CONF_INT, cache_bytes, "2147483648", 0, 1e15, CR_CMD_WORKER,
        "compile cache bound in bytes of objects: least recently used entries not in use are "
        "removed; 0 = unbounded"),
    /* 8 GiB: cicc on a large CUTLASS template stays below it */
    ROW("compile-memory-mb", CR_CONF_INT, compile_memory_mb, "8192", 0, 1e7,
        CR_CMD_WORKER | CR_CMD_RUN,
        "address space of each compiler process, in MiB; 0 = no cap (docs/security.md)"),
    ROW("cc", CR_CONF_STR, cc, "cc", 1, 0, CR_CMD_WORKER | CR_CMD_RUN | DRIVER,
        "C compiler for the c backend"),
    ROW("nvcc", CR_CONF_STR, nvcc, "nvcc", 1, 0, CR_CMD_WORKER | CR_CMD_RUN,
        "CUDA compiler for the cuda backend"),
    ROW("cuda-arch", CR_CONF_STR, cuda_arch, "", 1, 0, CR_CMD_WORKER | CR_CMD_RUN,
        "GPU architecture to compile for (sm_90); empty = the GPU's, read through NVML"),
    ROW("gpu", CR_CONF_INT, gpu, "0", 0, 1023, CR_CMD_WORKER,
        "NVML index of the GPU a cuda worker serves"),
    ROW("gpus", CR_CONF_STR, gpus, "", 1, 0, CR_CMD_WORKER,
        "all, or a comma list of NVML indices: one cuda worker per GPU (id <worker-id>-g<i>), "
        "each bound to its GPU's cores; empty = just --gpu"),
    /* 8: the GPUs of one HGX node, CR_TASK_MAX_GPUS */
    ROW("gpus-per-worker", CR_CONF_INT, gpus_per_worker, "1", 1, 8, CR_CMD_WORKER,
        "with --gpus: GPUs each worker owns, for tasks with \"gpus\": N (docs/multigpu.md); the "
        "GPUs are split into groups of this many, NVLink-joined where NVML says so, one worker "
        "per group (id <worker-id>-g<i>+<j>, one-GPU jobs on its first GPU)"),
    ROW("gpu-group", CR_CONF_STR, gpu_group, "", 1, 0, CR_CMD_WORKER | CR_CMD_RUN,
        "comma list of NVML indices one worker owns for multi-GPU tasks, its GPU first (it "
        "replaces --gpu); set for each worker of --gpus/--gpus-per-worker; empty = one GPU"),
    ROW("runner", CR_CONF_STR, runner, "", 1, 0, CR_CMD_WORKER | CR_CMD_RUN | DRIVER,
        "crucible-runner path; empty = next to the crucible binary"),
    ROW("backends", CR_CONF_STR, backends, "c", 1, 0, CR_CMD_WORKER | CR_CMD_RUN | DRIVER,
        "comma list of backends the worker serves (c, cuda, torch)"),
    /* 0: a fixed 2 left a 16-core GPU host's GPU waiting for compiles (worker/worker.c,
     * s_autosize, says how it is sized) */
    ROW("compile-jobs", CR_CONF_INT, compile_jobs, "0", 0, 256, CR_CMD_WORKER | CR_CMD_RUN | DRIVER,
        "compiler processes a worker runs at once; 0 = auto: the cores the worker may use "
        "(those local to its GPU) less one for the timing thread, at most one per GiB of "
        "available memory; the choice is logged"),
    ROW("spares", CR_CONF_INT, spares, "-1", -1, CR_SPARES_MAX, CR_CMD_WORKER | CR_CMD_RUN,
        "runners a cuda worker keeps started ahead, CUDA context made (each holds a judge "
        "arena of at most 4 GiB and 1/12 of the free GPU memory); 0 = each job starts its own; "
        "-1 = auto: 4, fewer when free GPU or host memory is short; the choice is logged"),
    ROW("runner-per-job", CR_CONF_BOOL, runner_per_job, "0", 0, 1, CR_CMD_WORKER | CR_CMD_RUN,
        "a runner process per job (with spares) instead of the serving judge, one process "
        "that judges the worker's c, cuda and torch jobs one after another: it loads no client code, "
        "each candidate still runs in a fresh executor, and a cuda judge keeps its context and "
        "the reference's executor between jobs (docs/judge.md)"),
    ROW("cpu", CR_CONF_INT, cpu, "-1", -1, 4095, CR_CMD_WORKER,
        "core the runner's timing thread is pinned to; -1 = pick one"),
    /* 65534: Debian's nobody/nogroup; 0 is refused (it would keep root) */
    ROW("sandbox-uid", CR_CONF_INT, sandbox_uid, "65534", 1, 4294967294.0,
        CR_CMD_WORKER | CR_CMD_RUN,
        "uid and gid a runner started as root drops to before loading a candidate "
        "(docs/sandbox.md)"),
    /* another uid than the executors': RLIMIT_NPROC counts every process of
     * a uid, and a farm of compilers (nvcc and its children, 15 boxes at
     * once) used up the executors' 256 on the H200: Python's OpenMP could
     * not start a thread and the reference ended with exit 1 (session 17) */
    ROW("compile-uid", CR_CONF_INT, compile_uid, "65533", 1, 4294967294.0,
        CR_CMD_WORKER | CR_CMD_RUN,
        "uid and gid a worker started as root runs its compile boxes as; not the "
        "sandbox uid's (docs/security.md)"),
    ROW("metrics-addr", CR_CONF_STR, metrics_addr, "", 1, 0,
        CR_CMD_COORDINATOR | CR_CMD_WORKER,
        "HOST:PORT serving Prometheus metrics (GET /metrics, GET /healthz); :PORT = every "
        "interface; worker --gpus: GPU i's worker gets PORT+i; empty = off"),
    /* job options */
    ROW("compile-timeout-s", CR_CONF_DOUBLE, compile_timeout_s, "60", 0.1, 3600, JOBOPT,
        "seconds a candidate's compile may take: COMPILE_TIMEOUT (the task's reference gets "
        "the worker's); a worker's is a cap that a job's options may lower, never raise"),
    ROW("run-timeout-s", CR_CONF_DOUBLE, run_timeout_s, "60", 0.1, 3600, JOBOPT,
        "seconds a runner may take (verify and timing); then it is killed: TIMEOUT; a "
        "worker's is a cap that a job's options may lower, never raise"),
    ROW("queue-timeout-s", CR_CONF_DOUBLE, queue_timeout_s, "0", 0, 1e7,
        CR_CMD_COORDINATOR | CR_CMD_SUBMIT | CR_CMD_RUN | CR_CMD_GATEWAY | DRIVER,
        "seconds a job may wait for a worker; then it is recorded INFRA_ERROR; 0 = no limit"),
    ROW("time-budget-s", CR_CONF_DOUBLE, time_budget_s, "1.0", 0.001, 3600, JOBOPT,
        "seconds of timing per bench case at most"),
    ROW("rse-target", CR_CONF_DOUBLE, rse_target, "0.005", 1e-5, 1, JOBOPT,
        "relative standard error at which timing stops early"),
    ROW("reward", CR_CONF_STR, reward, "default", 1, 0, JOBOPT,
        "reward formula: default, kevin, drkernel (optionally @version)"),
    ROW("ref-policy", CR_CONF_STR, ref_policy, "interleaved", 1, 0, JOBOPT,
        "reference timing: interleaved (beside every candidate) or cached"),
    ROW("clock-policy", CR_CONF_STR, clock_policy, "observe", 1, 0, JOBOPT,
        "GPU clocks: observe, lock:base or lock:<MHz> (locking needs root)"),
    /* client */
    ROW("batch", CR_CONF_STR, batch, "", 1, 0, CR_CMD_SUBMIT | CR_CMD_RUN | DRIVER,
        "batch id; empty = generated"),
    ROW("format", CR_CONF_STR, format, "jsonl", 1, 0, CR_CMD_RESULTS | CR_CMD_ROLLOUT,
        "results format: jsonl, csv, pb (length-delimited RewardRecord) or kernelbench "
        "(KernelBench's fields, jsonl); rollout: jsonl or pb (length-delimited Trajectory)"),
    ROW("out", CR_CONF_STR, out, "", 1, 0, CR_CMD_RESULTS | CR_CMD_RUN | CR_CMD_REPORT | DRIVER,
        "results file; empty = stdout (run: crucible-results.jsonl; report: the HTML file, "
        "empty = report-<batch>.html; rollout: trajectories, empty = trajectories.jsonl, its "
        "write-ahead log beside it as <out>.wal; curate: the SFT JSONL, empty = sft.jsonl)"),
    ROW("wait-s", CR_CONF_DOUBLE, wait_s, "0", 0, 1e7, CR_CMD_CLIENT | CR_CMD_RUN,
        "give up after this many seconds; 0 = wait as long as it takes"),
    ROW("workers", CR_CONF_INT, workers, "2", 1, 256, CR_CMD_RUN, "local workers to start"),
    ROW("log-dir", CR_CONF_STR, log_dir, "", 1, 0, CR_CMD_RUN | DRIVER,
        "keep the local cluster's logs (coordinator.log, worker-w<k>.log) in this folder; "
        "empty = removed with the cluster"),
    /* watch and results always stream to the end: following is what they are for */
    ROW("follow", CR_CONF_BOOL, follow, "0", 0, 1, CR_CMD_SUBMIT,
        "after submitting, show progress until the batch is done"),
    /* gateway: the HTTP front door for trainers (gateway/gateway.h, docs/gateway.md) */
    ROW("listen", CR_CONF_STR, listen, "127.0.0.1:8470", 1, 0, CR_CMD_GATEWAY,
        "HTTP address:port to listen on; a non-loopback address needs --token-file"),
    ROW("tasks", CR_CONF_STR, tasks, "", 1, 0, CR_CMD_GATEWAY,
        "a task folder, or a folder of task folders, that jobs and remote-reward labels name "
        "(inline tasks need none)"),
    ROW("token-file", CR_CONF_STR, token_file, "", 1, 0, CR_CMD_GATEWAY,
        "file of bearer tokens, one a line (# lines are comments): every request must carry "
        "Authorization: Bearer <token>; required off loopback"),
    ROW("tls-cert", CR_CONF_STR, tls_cert, "", 1, 0, CR_CMD_GATEWAY,
        "PEM certificate file: serve HTTPS (with --tls-key); empty = plain HTTP (put a TLS "
        "proxy in front off the host)"),
    ROW("tls-key", CR_CONF_STR, tls_key, "", 1, 0, CR_CMD_GATEWAY,
        "PEM private key file of --tls-cert"),
    /* 25: under slime's 30 s client timeout; a retry of a request that timed out joins the same job */
    ROW("request-timeout-s", CR_CONF_DOUBLE, request_timeout_s, "25", 0.05, 86400, CR_CMD_GATEWAY,
        "seconds a request waits for its records when it names no timeout (?timeout_s= or "
        "X-Crucible-Timeout-S); then 504 (remote reward) or what is done so far"),
    /* 64 MiB: the coordinator's largest message (max-msg) */
    ROW("max-body", CR_CONF_INT, max_body, "67108864", 1024, 1073741824, CR_CMD_GATEWAY,
        "largest request body in bytes; a larger one is answered 413"),
    ROW("max-connections", CR_CONF_INT, max_connections, "2048", 4, 65536, CR_CMD_GATEWAY,
        "HTTP connections served at once (one thread each); more wait in the kernel's backlog"),
    ROW("keep-s", CR_CONF_DOUBLE, keep_s, "3600", 1, 1e7, CR_CMD_GATEWAY,
        "seconds a finished batch stays in the gateway's memory (its records stay in the "
        "coordinator's database)"),
    /* rollout and curate: the driver against OpenAI-compatible servers (docs/rollout.md) */
    ROW("endpoints", CR_CONF_STR, endpoints, "http://127.0.0.1:8000/v1", 1, 0, CR_CMD_ROLLOUT,
        "comma list of OpenAI-compatible base URLs (vLLM, SGLang, llama.cpp server); requests "
        "go to POST <url>/chat/completions, spread over them by requests in flight"),
    ROW("model", CR_CONF_STR, model, "default", 1, 0, CR_CMD_ROLLOUT,
        "the model name sent in every request"),
    ROW("api-key-file", CR_CONF_STR, api_key_file, "", 1, 0, CR_CMD_ROLLOUT,
        "file whose first line is the API key (sent as Authorization: Bearer); never on the "
        "command line; empty = --api-key-env"),
    ROW("api-key-env", CR_CONF_STR, api_key_env, "OPENAI_API_KEY", 1, 0, CR_CMD_ROLLOUT,
        "environment variable holding the API key when there is no --api-key-file; unset = "
        "no Authorization header"),
    /* 4: published multi-turn recipes keep a few requests at once per server */
    ROW("concurrency", CR_CONF_INT, concurrency, "4", 1, 4096, CR_CMD_ROLLOUT,
        "requests in flight per endpoint at most"),
    ROW("samples", CR_CONF_INT, samples, "4", 1, 1024, CR_CMD_ROLLOUT,
        "samples per task, one GRPO group (group id <rollout>/<task>)"),
    ROW("turns", CR_CONF_INT, turns, "3", 1, 64, CR_CMD_ROLLOUT,
        "turns per sample at most: after each the judge's feedback is appended and the model "
        "tries again"),
    ROW("sample-mode", CR_CONF_STR, sample_mode, "n", 1, 0, CR_CMD_ROLLOUT,
        "n: a group's first turn is one request with n = --samples; single: one request per "
        "sample"),
    ROW("stream", CR_CONF_BOOL, stream, "0", 0, 1, CR_CMD_ROLLOUT,
        "ask for server-sent events (stream: true, usage in the last chunk)"),
    ROW("temperature", CR_CONF_DOUBLE, temperature, "1.0", 0, 10, CR_CMD_ROLLOUT,
        "sampling temperature"),
    ROW("top-p", CR_CONF_DOUBLE, top_p, "1.0", 0, 1, CR_CMD_ROLLOUT, "nucleus sampling top_p"),
    ROW("max-tokens", CR_CONF_INT, max_tokens, "4096", 1, 1e7, CR_CMD_ROLLOUT,
        "max_tokens of every request"),
    ROW("llm-timeout-s", CR_CONF_DOUBLE, llm_timeout_s, "600", 0.05, 86400, CR_CMD_ROLLOUT,
        "seconds one HTTP request may take in all; then it is retried"),
    ROW("retries", CR_CONF_INT, retries, "6", 0, 100, CR_CMD_ROLLOUT,
        "retries of one request after 408, 429, 5xx, a dropped connection, a timeout or an "
        "answer that is not valid JSON; then the sample ends with stop llm_error"),
    /* 500 ms doubling to 30 s: the shape of OpenAI's own client (0.5 s .. 8 s) with room for
     * an overloaded server's Retry-After */
    ROW("backoff-ms", CR_CONF_INT, backoff_ms, "500", 0, 600000, CR_CMD_ROLLOUT,
        "first retry's backoff in ms, doubled per retry, full jitter; Retry-After wins when "
        "longer"),
    ROW("backoff-max-ms", CR_CONF_INT, backoff_max_ms, "30000", 0, 3600000, CR_CMD_ROLLOUT,
        "backoff cap in ms"),
    ROW("feedback", CR_CONF_STR, feedback, "sentences", 1, 0, CR_CMD_ROLLOUT,
        "feedback template after a judged turn: sentences (fixed sentences) or json (the "
        "judge's record)"),
    /* 24000 characters: about 6k tokens, inside every served context beside max-tokens */
    ROW("history-chars", CR_CONF_INT, history_chars, "24000", 1000, 1e9, CR_CMD_ROLLOUT,
        "characters of a conversation sent at most: the oldest turns after the prompt are "
        "dropped first"),
    /* 800: the cut published multi-turn recipes make of compiler output */
    ROW("error-chars", CR_CONF_INT, error_chars, "800", 50, 1e6, CR_CMD_ROLLOUT,
        "characters of a compile log or judge message quoted in feedback"),
    ROW("target-speedup", CR_CONF_DOUBLE, target_speedup, "1.0", 0, 1e6, CR_CMD_ROLLOUT,
        "a sample stops once a turn is OK with at least this speedup (else at --turns)"),
    ROW("credit", CR_CONF_STR, credit, "discounted", 1, 0, CR_CMD_ROLLOUT,
        "credit formula over turns: discounted (R_t = S_t + gamma R_t+1) or best (best reward "
        "of this turn and later), optionally @version"),
    ROW("gamma", CR_CONF_DOUBLE, gamma, "0.8", 0, 1, CR_CMD_ROLLOUT,
        "discount of the discounted return"),
    ROW("prompt-template", CR_CONF_STR, prompt_template, "", 1, 0, DRIVER,
        "prompt template file ({task} {language} {hardware} {signature} {prompt}); empty = "
        "the built-in one (docs/rollout.md)"),
    ROW("hardware", CR_CONF_STR, hardware, "", 1, 0, DRIVER,
        "hardware the prompt names; empty = from the task's language (a CPU core, an NVIDIA "
        "GPU)"),
    ROW("local-workers", CR_CONF_INT, local_workers, "0", 0, 256, DRIVER,
        "start an embedded coordinator and this many local workers (as crucible run); 0 = "
        "use the coordinator at --clients-endpoint"),
    ROW("no-judge", CR_CONF_BOOL, no_judge, "0", 0, 1, CR_CMD_ROLLOUT,
        "judge nothing and reach no cluster: every sample runs --turns turns unjudged, with a "
        "fixed feedback sentence (the driver's benchmark)"),
    ROW("min-speedup", CR_CONF_DOUBLE, min_speedup, "1.0", 0, 1e6, CR_CMD_CURATE,
        "keep a correct solution only when at least this fast against the reference"),
    ROW("report", CR_CONF_STR, report, "", 1, 0, CR_CMD_CURATE,
        "curate report (JSON: kept and dropped, each with why); empty = <out>.report.json"),
    /* security: CURVE with allow-lists, or plaintext on loopback only (common/curve.h) */
    ROW("key", CR_CONF_STR, key, "", 1, 0,
        CR_CMD_COORDINATOR | CR_CMD_WORKER | CR_CMD_CLIENT | CR_CMD_GATEWAY,
        "this process's CURVE secret key file (crucible keygen); empty = plaintext, "
        "loopback/ipc endpoints only"),
    ROW("server-key", CR_CONF_STR, server_key, "", 1, 0,
        CR_CMD_WORKER | CR_CMD_CLIENT | CR_CMD_GATEWAY,
        "the coordinator's CURVE public key file (with --key)"),
    ROW("allow-clients", CR_CONF_STR, allow_clients, "", 1, 0, CR_CMD_COORDINATOR,
        "file of client public keys let in: one z85 key a line, lines starting # are comments"),
    ROW("allow-workers", CR_CONF_STR, allow_workers, "", 1, 0, CR_CMD_COORDINATOR,
        "file of worker public keys let in: one z85 key a line, lines starting # are comments"),
    ROW("insecure", CR_CONF_BOOL, insecure, "0", 0, 1,
        CR_CMD_COORDINATOR | CR_CMD_WORKER | CR_CMD_CLIENT | CR_CMD_GATEWAY,
        "allow plain TCP (no CURVE): needed for tcp:// without keys; loopback only unless "
        "--insecure-force; an error together with --key"),
    ROW("insecure-force", CR_CONF_BOOL, insecure_force, "0", 0, 1,
        CR_CMD_COORDINATOR | CR_CMD_WORKER | CR_CMD_CLIENT | CR_CMD_GATEWAY,
        "allow plain TCP on any endpoint (traffic and peers unauthenticated); an error "
        "together with --key"),
    /* general */
    ROW("log-level", CR_CONF_STR, log_level, "info", 1, 0, CR_CMD_ALL,
        "debug, info, warn, error or off"),
    ROW("max-msg", CR_CONF_INT, max_msg, "67108864", 4096, 67108864, CR_CMD_ALL & ~CR_CMD_TASK,
        "largest message decoded, in bytes; up to twice that is read and refused with "
        "E_TOO_BIG, anything larger is dropped by the socket unread"),
};

const size_t cr_config_nrows = sizeof cr_config_rows / sizeof cr_config_rows[0];

const cr_conf_row_t *cr_config_find(const char *name)
{
    for (size_t i = 0; i < cr_config_nrows; i++)
        if (strcmp(cr_config_rows[i].name, name) == 0)
            return &cr_config_rows[i];
    return NULL;
}

/* Writes "<label>: <reason>" into err and returns CR_E_USAGE. */
static int s_fail(char *err, size_t errlen, const char *label, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int s_fail(char *err, size_t errlen, const char *label, const char *fmt, ...)
{
    if (err && errlen) {
        int n = snprintf(err, errlen, "%s: ", label);
        if (n >= 0 && (size_t)n < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return CR_E_USAGE;
}

/* Checks the text settings that have a closed set of values. Returns NULL
 * when v is acceptable, else what the value should have been. */
static const char *s_check_text(const cr_conf_row_t *r, const char *v)
{
    const char *n = r->name;
    if (strcmp(n, "ref-policy") == 0)
        return strcmp(v, "interleaved") == 0 || strcmp(v, "cached") == 0
                   ? NULL
                   : "expected interleaved or cached";
    if (strcmp(n, "clock-policy") == 0) {
        if (strcmp(v, "observe") == 0 || strcmp(v, "lock:base") == 0)
            return NULL;
        /* lock:<MHz>: 1 to 5 digits, no GPU clocks above 99999 MHz */
        const char *d = strncmp(v, "lock:", 5) == 0 ? v + 5 : NULL;
        size_t k = d ? strspn(d, "0123456789") : 0;
        return d && k >= 1 && k <= 5 && d[k] == '\0' && atoi(d) > 0
                   ? NULL
                   : "expected observe, lock:base or lock:<MHz>";
    }
    if (strcmp(n, "durability") == 0)
        return strcmp(v, "full") == 0 || strcmp(v, "normal") == 0 || strcmp(v, "off") == 0
                   ? NULL
                   : "expected full, normal or off";
    if (strcmp(n, "sample-mode") == 0)
        return strcmp(v, "n") == 0 || strcmp(v, "single") == 0 ? NULL : "expected n or single";
    if (strcmp(n, "feedback") == 0)
        return strcmp(v, "sentences") == 0 || strcmp(v, "json") == 0 ? NULL
                                                                   : "expected sentences or json";
    if (strcmp(n, "format") == 0)
        return strcmp(v, "jsonl") == 0 || strcmp(v, "csv") == 0 || strcmp(v, "pb") == 0 ||
                       strcmp(v, "kernelbench") == 0
                   ? NULL
                   : "expected jsonl, csv, pb or kernelbench";
    if (strcmp(n, "log-level") == 0) {
        cr_log_level_t l;
        return cr_log_parse_level(v, &l) == 0 ? NULL
                                              : "expected debug, info, warn, error or off";
    }
    if (strcmp(n, "reward") == 0)
        return cr_reward_known(v) ? NULL : "unknown formula (default, kevin, drkernel)";
    if (strcmp(n, "backends") == 0) {
        /* a non-empty comma list of known backends */
        const char *p = v;
        do {
            size_t k = strcspn(p, ",");
            if (!((k == 1 && strncmp(p, "c", 1) == 0) || (k == 4 && strncmp(p, "cuda", 4) == 0) ||
                  (k == 5 && strncmp(p, "torch", 5) == 0)))
                return "expected a comma list of c, cuda, torch";
            p += k;
        } while (*p++ == ',');
        return NULL;
    }
    if (strcmp(n, "gpu-group") == 0) {
        /* "", or 1 to 8 distinct indices in --gpu's range */
        if (v[0] == '\0')
            return NULL;
        int seen[8], k = 0;
        const char *p = v;
        do {
            size_t len = strspn(p, "0123456789");
            int g = atoi(p);
            if (len < 1 || len > 4 || g > 1023 || (p[len] != ',' && p[len] != '\0') || k == 8)
                return "expected a comma list of 1 to 8 GPU indices (0,1)";
            for (int i = 0; i < k; i++)
                if (seen[i] == g)
                    return "names a GPU twice";
            seen[k++] = g;
            p += len;
        } while (*p++ == ',');
        return NULL;
    }
    if (strcmp(n, "gpus") == 0) {
        /* "", "all", or a comma list of indices in --gpu's range */
        if (v[0] == '\0' || strcmp(v, "all") == 0)
            return NULL;
        const char *p = v;
        do {
            size_t k = strspn(p, "0123456789");
            if (k < 1 || k > 4 || atoi(p) > 1023 || (p[k] != ',' && p[k] != '\0'))
                return "expected all or a comma list of GPU indices (0,2)";
            p += k;
        } while (*p++ == ',');
        return NULL;
    }
    if (strstr(n, "-endpoint"))
        return strstr(v, "://") ? NULL : "expected an endpoint such as tcp://host:port or ipc:///path";
    return NULL;
}

/* Sets row r from text; label names the source in errors ("--x" or "CRUCIBLE_X"). */
static int s_set(cr_config_t *c, const cr_conf_row_t *r, const char *value, const char *label,
                 char *err, size_t errlen)
{
    void *field = (char *)c + r->offset;
    int bounded = r->min <= r->max;
    char *end = NULL;
    switch (r->type) {
    case CR_CONF_INT: {
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (!*value || *end || errno)
            return s_fail(err, errlen, label, "'%s' is not an integer", value);
        if (bounded && ((double)v < r->min || (double)v > r->max))
            return s_fail(err, errlen, label, "%lld is out of range [%.15g, %.15g]", v, r->min,
                          r->max);
        *(int64_t *)field = v;
        return 0;
    }
    case CR_CONF_DOUBLE: {
        errno = 0;
        double v = strtod(value, &end);
        if (!*value || *end || errno || !isfinite(v))
            return s_fail(err, errlen, label, "'%s' is not a number", value);
        if (bounded && (v < r->min || v > r->max))
            return s_fail(err, errlen, label, "%g is out of range [%g, %g]", v, r->min, r->max);
        *(double *)field = v;
        return 0;
    }
    case CR_CONF_BOOL: {
        static const char *const yes[] = {"1", "true", "yes", "on"};
        static const char *const no[] = {"0", "false", "no", "off"};
        for (int i = 0; i < 4; i++) {
            if (strcasecmp(value, yes[i]) == 0 || strcasecmp(value, no[i]) == 0) {
                *(int64_t *)field = strcasecmp(value, yes[i]) == 0;
                return 0;
            }
        }
        return s_fail(err, errlen, label, "'%s' is not a boolean (1/0, true/false)", value);
    }
    case CR_CONF_STR: {
        if (strlen(value) >= CR_CONFIG_STR)
            return s_fail(err, errlen, label, "value longer than %d bytes", CR_CONFIG_STR - 1);
        const char *why = s_check_text(r, value);
        if (why)
            return s_fail(err, errlen, label, "'%s': %s", value, why);
        memcpy(field, value, strlen(value) + 1);
        return 0;
    }
    }
    return s_fail(err, errlen, label, "unknown setting type");
}

void cr_config_defaults(cr_config_t *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < cr_config_nrows; i++) {
        /* the defaults are ours, so a failure here is a bug in the table */
        int rc = s_set(c, &cr_config_rows[i], cr_config_rows[i].def, cr_config_rows[i].name,
                       NULL, 0);
        if (rc != 0)
            abort();
    }
}

int cr_config_set(cr_config_t *c, const char *name, const char *value, char *err, size_t errlen)
{
    char label[80];
    snprintf(label, sizeof label, "--%s", name);
    const cr_conf_row_t *r = cr_config_find(name);
    if (!r)
        return s_fail(err, errlen, label, "unknown option");
    return s_set(c, r, value, label, err, errlen);
}

int cr_config_env(cr_config_t *c, unsigned cmd, char *err, size_t errlen)
{
    for (size_t i = 0; i < cr_config_nrows; i++) {
        const cr_conf_row_t *r = &cr_config_rows[i];
        if (!(r->cmds & cmd))
            continue;
        char var[96] = "CRUCIBLE_";
        size_t k = strlen(var);
        for (const char *p = r->name; *p && k < sizeof var - 1; p++)
            var[k++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
        var[k] = '\0';
        const char *v = getenv(var);
        if (v) {
            int rc = s_set(c, r, v, var, err, errlen);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

int cr_config_argv(cr_config_t *c, unsigned cmd, int argc, char **argv, int *npos, char *err,
                   size_t errlen)
{
    *npos = 0;
    /* --help wins over any error elsewhere on the line */
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    int n = 0, only_pos = 0;
    for (int i = 0; i < argc; i++) {
        char *a = argv[i];
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            argv[n++] = a; /* n <= i: moving left never overwrites an unread argument */
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (a[1] != '-')
            return s_fail(err, errlen, a, "unknown option (options are --name)");
        char name[80];
        const char *eq = strchr(a + 2, '=');
        size_t len = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        snprintf(name, sizeof name, "%.*s", (int)len, a + 2);
        char label[96];
        snprintf(label, sizeof label, "--%s", name);
        const cr_conf_row_t *r = cr_config_find(name);
        if (!r)
            return s_fail(err, errlen, label, "unknown option");
        if (!(r->cmds & cmd))
            return s_fail(err, errlen, label, "not an option of this command");
        const char *value;
        if (eq)
            value = eq + 1;
        else if (r->type == CR_CONF_BOOL)
            value = "1";
        else if (i + 1 < argc)
            value = argv[++i];
        else
            return s_fail(err, errlen, label, "missing value");
        int rc = s_set(c, r, value, label, err, errlen);
        if (rc != 0)
            return rc;
    }
    *npos = n;
    return 0;
}

const char *cr_config_format(const cr_config_t *c, const cr_conf_row_t *r, char *buf, size_t len)
{
    const void *field = (const char *)c + r->offset;
    switch (r->type) {
    case CR_CONF_INT:
    case CR_CONF_BOOL:
        snprintf(buf, len, "%lld", (long long)*(const int64_t *)field);
        break;
    case CR_CONF_DOUBLE: {
        /* the shortest text that reads back as the same double */
        double v = *(const double *)field;
        /* start at the integer digits, so 60 prints as "60" and not "6e+01" */
        int digits = fabs(v) >= 1 && fabs(v) < 1e15 ? (int)floor(log10(fabs(v))) + 1 : 1;
        for (int prec = digits; prec <= 17; prec++) {
            snprintf(buf, len, "%.*g", prec, v);
            if (strtod(buf, NULL) == v)
                break;
        }
        break;
    }
    case CR_CONF_STR:
        snprintf(buf, len, "%s", (const char *)field);
        break;
    }
    return buf;
}

void cr_config_help(FILE *f, unsigned cmd)
{
    for (size_t i = 0; i < cr_config_nrows; i++) {
        const cr_conf_row_t *r = &cr_config_rows[i];
        if (!(r->cmds & cmd))
            continue;
        char left[80];
        snprintf(left, sizeof left, "--%s%s", r->name, r->type == CR_CONF_BOOL ? "" : " VALUE");
        fprintf(f, "  %-28s %s (default: %s)\n", left, r->help, r->def[0] ? r->def : "empty");
    }
}

void cr_config_dump(FILE *f, const cr_config_t *c, unsigned cmd)
{
    char buf[CR_CONFIG_STR + 32];
    for (size_t i = 0; i < cr_config_nrows; i++)
        if (cr_config_rows[i].cmds & cmd)
            fprintf(f, "%s = %s\n", cr_config_rows[i].name,
                    cr_config_format(c, &cr_config_rows[i], buf, sizeof buf));
}

int cr_config_has_backend(const char *backends, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = backends; p && *p;) {
        p += strspn(p, ", ");
        size_t k = strcspn(p, ", ");
        if (k == n && strncmp(p, name, n) == 0)
            return 1;
        p += k;
    }
    return 0;
}
