//! The schema: every config key Cairn knows, its type, default and description, in one table.

/// The type of a config value, for validation and for parsing environment overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Int { min: i64 },
    Float,
    Str,
    StrList,
    /// A list of TCP ports (1–65535).
    PortList,
    Choice(&'static [&'static str]),
}

/// One documented config key.
pub struct KeyDef {
    pub section: &'static str,
    pub key: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    pub doc: &'static str,
}

macro_rules! keys {
    ($( $section:literal $key:literal $kind:expr, $default:literal, $doc:literal; )*) => {
        /// Every config key cairn knows, with its type, default (TOML syntax) and description.
        pub const SCHEMA: &[KeyDef] = &[ $( KeyDef { section: $section, key: $key, kind: $kind, default: $default, doc: $doc }, )* ];
    };
}


keys! {
    "orchestrator" "max_concurrent_agents" Kind::Int { min: 1 }, "5", "How many agents may execute at once, across every cairn process of the project.";
    "orchestrator" "signal_polling" Kind::Bool, "true", "Whether `cairn up` and the Neovim host take signal files from $CAIRN_HOME/signals/.";
    "orchestrator" "poll_interval_ms" Kind::Int { min: 10 }, "250", "How often the queue and the signal directory are polled, in milliseconds.";
    "orchestrator" "auto_spawn" Kind::Bool, "true", "Whether queued agents start by themselves (in `cairn up` and the Neovim host); false holds each newly queued agent until `cairn start` or :CairnStart.";
    "orchestrator" "default_provider" Kind::Choice(&["", "file", "inline", "llm"]), "\"\"", "The provider of work queued without one (signal files, `cairn queue`); empty: a .pym script is file, other text llm when an LLM is configured. `cairn up --provider P` sets it for that process.";
    "sandbox" "timeout_seconds" Kind::Int { min: 1 }, "60", "Wall-clock limit of one agent run; the sandbox process is killed at the limit.";
    "sandbox" "max_memory_mb" Kind::Int { min: 16 }, "100", "Memory available to the agent's script, in MiB.";
    "sandbox" "max_recursion" Kind::Int { min: 50 }, "1000", "Python recursion limit inside the sandbox (at most 16000 frames: deeper recursion raises RecursionError, never a crash).";
    "sandbox" "max_log_bytes" Kind::Int { min: 1024 }, "1048576", "Bound on log() output and on the size of the run's result, in bytes.";
    "sandbox" "max_write_bytes" Kind::Int { min: 1 }, "52428800", "Total bytes an agent may write through write_file in one run.";
    "sandbox" "max_files_written" Kind::Int { min: 1 }, "10000", "Number of distinct files an agent may write or delete in one run.";
    "sandbox" "random_seed" Kind::Int { min: -1 }, "-1", "Seed of the random module in agent scripts; -1 gives every run a fresh seed from the host.";
    "sandbox" "interpreter" Kind::Choice(&["rustpython", "cpython"]), "\"rustpython\"", "Which Python runs agent scripts: rustpython (built in, starts in milliseconds, no Python needed on the machine) or cpython (the host's python, inside a confined run workspace: CPython's behaviour for every module, plain file I/O captured into the proposal). A script's first lines may say `# cairn: interpreter=cpython`; `cairn run --interpreter` wins over both.";
    "sandbox" "python" Kind::Str, "\"python3\"", "The CPython of interpreter = \"cpython\": a name looked up on the run's PATH or an absolute path (outside the system directories, list it in [run] read_paths); it must be Python 3.10 or newer.";
    "llm" "provider" Kind::Choice(&["openai", "anthropic", "ollama"]), "\"openai\"", "The API spoken: openai (OpenAI-compatible chat completions), anthropic (the Messages API, default endpoint https://api.anthropic.com) or ollama (the OpenAI-compatible API, default endpoint http://127.0.0.1:11434/v1).";
    "llm" "endpoint" Kind::Str, "\"\"", "Base URL of the API, e.g. http://127.0.0.1:11434/v1 (Ollama); empty: the provider's default (none for openai).";
    "llm" "model" Kind::Str, "\"\"", "Model name sent with every completion request (empty: default_model).";
    "llm" "default_model" Kind::Str, "\"\"", "The default model: used when model is empty, and once when the server says model does not exist (HTTP 404 or an error saying so), which the log notes.";
    "llm" "api_key_env" Kind::Str, "\"OPENAI_API_KEY\"", "Name of the environment variable holding the API key (a Bearer token; x-api-key for anthropic, which reads ANTHROPIC_API_KEY while this is left at its default).";
    "llm" "command" Kind::StrList, "[]", "Alternative to endpoint: argv of a command that reads the prompt on stdin and prints the reply.";
    "llm" "temperature" Kind::Float, "0.2", "Sampling temperature.";
    "llm" "max_tokens" Kind::Int { min: 1 }, "2000", "Maximum tokens of one completion.";
    "llm" "timeout_seconds" Kind::Int { min: 1 }, "120", "Timeout of one LLM request.";
    "llm" "repair_attempts" Kind::Int { min: 0 }, "1", "How many times generated code that fails the pre-flight check is sent back to the model for a repair.";
    "llm" "rate_limit_retries" Kind::Int { min: 0 }, "5", "How many times an agent whose request was rate-limited (HTTP 429) goes back to the queue before it errors.";
    "llm" "rate_limit_max_wait_seconds" Kind::Int { min: 1 }, "60", "Longest wait of a rate-limited agent in the queue: its Retry-After, else 1, 2, 4, ... seconds, capped here.";
    "gc" "max_age_hours" Kind::Int { min: 0 }, "168", "Terminal agents older than this are removed by `cairn gc`.";
    "gc" "keep_latest" Kind::Int { min: 0 }, "3", "The newest terminal agents kept by `cairn gc` whatever their age.";
    "gc" "max_workspaces" Kind::Int { min: 0 }, "10", "Preview workspaces kept; the least recently materialized go first.";
    "gc" "max_total_size_mb" Kind::Int { min: 0 }, "1000", "Cap on the disk use of overlays (live and archived) and preview workspaces: past it, decided agents go oldest first (keep_latest stays); 0: no cap.";
    "gc" "auto_interval_minutes" Kind::Int { min: 0 }, "30", "How often `cairn up` and the Neovim host collect garbage by themselves, when no agent runs and no accept is under way; 0: only `cairn gc`.";
    "preview" "ports" Kind::PortList, "[]", "Ports of a preview's own loopback forwarded to the host's 127.0.0.1 while the preview is open (the agent's web app, opened in a browser before accepting it). Empty: none; :CairnPreview asks.";
    "tmux" "split" Kind::Choice(&["horizontal", "vertical"]), "\"horizontal\"", "Direction of the preview split: horizontal puts the panes side by side.";
    "tmux" "size" Kind::Str, "\"50%\"", "Size of the preview pane (tmux -l syntax: cells or a percentage).";
    "tmux" "auto_create_session" Kind::Bool, "false", "Outside tmux, open previews in a detached tmux session of their own (cairn-<project>; `tmux attach -t` it) instead of a Neovim tab.";
    "tmux" "layout" Kind::Choice(&["", "main-vertical", "main-horizontal", "even-horizontal", "even-vertical", "tiled"]), "\"\"", "Several previews at once: each agent's preview gets its own pane, arranged with this tmux layout. Empty: one preview pane, reused by the next preview.";
    "jj" "enabled" Kind::Choice(&["auto", "true", "false"]), "\"auto\"", "Make each agent a jj change (accept abandons it once its content is in the working copy, reject abandons it): auto turns it on when the project root holds .jj/ and a usable jj is found; true insists on it (without a usable jj, `cairn status`, `cairn doctor` and :checkhealth report an error).";
    "jj" "describe" Kind::Str, "\"cairn: {agent} {summary}\"", "Description of an agent's jj change: {agent} is the agent id, {summary} its own summary when it gave one (submit_result, an MCP session's finish), else its task's first line; Cairn adds a Cairn-Agent trailer.";
    "jj" "program" Kind::Str, "\"jj\"", "The jj executable: a path, or a name looked up on PATH.";
    "jj" "create_change_on_spawn" Kind::Bool, "true", "Make an agent's jj change when it starts working (a run, a `cairn wrap` session, an MCP session) and update it as the agent writes, so `jj log` shows it at work; false: the change is made when the proposal reaches review.";
    "tasks" "statuses" Kind::StrList, "[\"backlog\", \"in_progress\", \"review\", \"done\", \"cancelled\"]", "Task statuses in order: where tasks start, where a session works, where a finished session puts them, the one that closes a task once its checks pass; any further ones close it without the checks gate.";
    "tasks" "check_timeout_seconds" Kind::Int { min: 1 }, "600", "Timeout of one task check command (a check's own timeout wins).";
    "run" "timeout_seconds" Kind::Int { min: 1 }, "600", "Wall-clock limit of one confined command (run_command, `cairn session exec`); the whole process tree is killed at the limit.";
    "run" "network" Kind::Choice(&["none", "host"]), "\"none\"", "Network of confined commands and checks: none (a private loopback only) or host (the host's network: an explicit opt-in, written in every run's log).";
    "run" "read_paths" Kind::StrList, "[]", "Host paths a confined command may read besides the system (read-only), e.g. [\"~/.cargo\", \"~/.rustup\", \".venv\"]; ~ is the home directory, a relative path is under the project.";
    "run" "env" Kind::StrList, "[]", "Names of environment variables passed to confined commands, besides PATH, LANG, TERM and HOME.";
    "run" "max_memory_mb" Kind::Int { min: 16 }, "4096", "One memory budget of a confined command's whole process tree, in MiB: its processes, the one tmpfs its /tmp, /var/tmp, /dev/shm, home and written layer share, and its sockets' and pipes' buffers. A memory cgroup holds it where the machine gives one; else it is split into per-process limits (at most 32 processes, each an equal share of stack and data; the tmpfs an eighth; descriptors per process): `cairn doctor` says which.";
    "run" "max_processes" Kind::Int { min: 1 }, "512", "Processes (and threads) a confined command may run at once (as root too: the command never runs as host root); without a memory cgroup at most 32.";
    "run" "max_output_bytes" Kind::Int { min: 1024 }, "65536", "Bytes of a confined command's output kept (its tail) for the log and the reply.";
    "run" "allow_unconfined" Kind::Bool, "false", "Where the kernel lacks a layer of the boundary (user namespaces, overlayfs in them), run commands anyway in a throwaway copy with a cleared environment, and say so in their log; off, such runs are refused.";
    "wrap" "hide" Kind::StrList, "[\"~/.ssh\", \"~/.gnupg\", \"~/.aws\", \"~/.config/gcloud\", \"~/.netrc\", \"~/.docker/config.json\", \"~/.password-store\", \"~/.kube\", \"~/.cargo/credentials\", \"~/.cargo/credentials.toml\", \"~/.git-credentials\", \"~/.config/git/credentials\", \"~/.npmrc\", \"~/.pypirc\"]", "Host paths hidden from a wrapped agent even inside directories it may see (credentials); ~ is your home directory.";
    "wrap" "home" Kind::StrList, "[\".config/git/ignore\", \".config/git/attributes\", \".gitignore_global\", \".cargo/bin\", \".cargo/env\", \".cargo/registry\", \".cargo/git\", \".rustup\", \".pyenv\", \".nvm\", \".volta\", \".bun\", \".deno\", \"go\", \".sdkman\", \".asdf\", \".tool-versions\"]", "What a wrapped agent sees of your home besides its own state and a ~/.gitconfig generated from yours without credentials (paths relative to the home): git's ignore and attributes files and language toolchains. Everything else of the home is hidden.";
    "wrap" "state" Kind::StrList, "[\"claude:.claude\", \"claude:.claude.json\", \"codex:.codex\", \"gemini:.gemini\", \"opencode:.config/opencode\", \"opencode:.local/share/opencode\", \"aider:.aider*\", \".npm\"]", "Agent CLIs' own state in your home (relative to it; a trailing * matches names; `claude:.claude` is seen by the `claude` command only, an entry without a command by every command): read through, its writes kept copy-on-write in one layer per CLI under $CAIRN_HOME/wrap-state (`cairn wrap state`); the real home never changes.";
    "wrap" "read_paths" Kind::StrList, "[]", "More host paths a wrapped agent may read (read-only), besides the system, its own installation and `[wrap] home`; ~ is your home, a relative path is under the project.";
    "wrap" "env" Kind::StrList, "[]", "More environment variables passed to a wrapped agent, besides the base ones (PATH, HOME, LANG, TERM, ...) and an agent CLI's own keys, to that CLI only (ANTHROPIC_*/CLAUDE_* to claude, OPENAI_*/CODEX_* to codex, GEMINI_*/GOOGLE_* to gemini); `cli:NAME` passes NAME to command cli only; names that look secret are passed only when listed here.";
    "wrap" "network" Kind::Choice(&["proxy", "none", "host"]), "\"proxy\"", "A wrapped agent's network: proxy (its own network namespace; only allow_hosts through Cairn's CONNECT proxy, and host_ports), none (a loopback only), host (the host's network: an explicit opt-in, recorded in the proposal).";
    "wrap" "allow_hosts" Kind::StrList, "[\"api.anthropic.com\", \"claude.ai\", \"platform.claude.com\", \"mcp-proxy.anthropic.com\", \"api.openai.com\", \"chatgpt.com\", \"auth.openai.com\", \"generativelanguage.googleapis.com\", \"cloudcode-pa.googleapis.com\", \"oauth2.googleapis.com\", \"accounts.google.com\", \"www.googleapis.com\"]", "Hosts a wrapped agent reaches through Cairn's proxy (port 443, or host:port; *.example.com matches subdomains): the model and sign-in endpoints of Claude Code, Codex CLI and Gemini CLI.";
    "wrap" "host_ports" Kind::PortList, "[]", "Ports of the host's loopback a wrapped agent reaches at 127.0.0.1 (a local model server such as Ollama on 11434, a test stub).";
    "wrap" "turn_quiet_ms" Kind::Int { min: 0 }, "3000", "An interactive agent (with a terminal) whose output has been quiet this long after changing files has ended its turn: its proposal goes to review while it waits at its prompt (0: only when it exits).";
    "wrap" "max_processes" Kind::Int { min: 1 }, "1024", "Processes (and threads) a wrapped agent or a preview may run at once.";
    "wrap" "max_tmp_mb" Kind::Int { min: 1 }, "2048", "Size of the one tmpfs a wrapped agent's or a preview's /tmp, /var/tmp and /dev/shm share, in MiB.";
    "wrap" "max_connections" Kind::Int { min: 1 }, "64", "Connections a wrapped agent may hold open at once through Cairn's proxy and host_ports (one more is refused); each must send its whole request within 10 seconds.";
    "ui" "ghost_text" Kind::Bool, "true", "Show reviewing agents' changes as ghost text in buffers.";
    "ui" "auto_reload" Kind::Bool, "true", "Reload unmodified buffers after accept or undo.";
    "ui" "keymaps" Kind::Bool, "true", "Create the default <leader>a / <leader>r / <leader>p mappings.";
}
