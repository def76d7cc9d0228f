import { execFile } from "node:child_process";

// @constants

const TIMEOUT_MS = 15000; // a hook that takes longer adds nothing rather than hold the turn up
const MAX_OUTPUT = 1 << 20;
const MAX_SESSIONS = 128; // sessions whose once-per-session answers are kept

// Run `mnemon hook <phase> --host HOST` with the host's event as JSON on stdin. Its answer is a JSON object
// with the fields this host's result takes; {} when the phase is off, failed, or has nothing to say.
function hook(phase, payload) {
  if (!PHASES.has(phase)) return Promise.resolve({});
  const [file, ...words] = COMMAND;
  return new Promise((resolve) => {
    const child = execFile(
      file,
      [...words, "hook", phase, "--host", HOST],
      { timeout: TIMEOUT_MS, maxBuffer: MAX_OUTPUT },
      (error, stdout, stderr) => {
        if (error) {
          console.error(`[mnemon] hook ${phase} failed: ${String(stderr || error.message).trim()}`);
          resolve({});
          return;
        }
        try {
          resolve(stdout.trim() ? JSON.parse(stdout) : {});
        } catch {
          resolve({});
        }
      },
    );
    child.stdin.on("error", () => {}); // the hook may be done before it reads all of its input
    child.stdin.end(JSON.stringify(payload ?? {}));
  });
}

// The last message of `role` in a host's list (`{role}` or OpenCode's `{info: {role}}`), or null.
function lastOf(messages, role) {
  const list = Array.isArray(messages) ? messages : [];
  return list.findLast((m) => (m?.role ?? m?.info?.role) === role) ?? null;
}

// The last exchange in a host's list, as the nudge hook reads it: the last assistant message and the user message
// before it (null where there is none).
function lastExchange(messages) {
  const list = Array.isArray(messages) ? messages : [];
  const at = list.findLastIndex((m) => (m?.role ?? m?.info?.role) === "assistant");
  const user = lastOf(list.slice(0, Math.max(at, 0)), "user");
  return { last_user_message: user, last_assistant_message: list[at] ?? null };
}

// Keep `value` for `key`, forgetting the oldest key past MAX_SESSIONS; returns `value`.
function cache(map, key, value) {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_SESSIONS) map.delete(map.keys().next().value);
  return value;
}
