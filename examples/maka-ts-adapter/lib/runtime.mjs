// `runtime.*` and `faults.arm` (docs/protocol.md §4.3, §4.4, §2.3) over upstream's real runtime.
//
// What runs: upstream's own kernel, composed the way its host composes it
// (runtime-host/src/server/execution-composition.ts), with the harness's model and tools:
//
// * stores: `createSessionStore(ws)`, `createSqliteAgentRunStore(ws)` and
//   `createWorkspaceRuntimeStore(ws)` (@maka/storage) — the same `<ws>/runtime.sqlite` that
//   lib/store.mjs reads, so `store.project` sees every fact the turn committed;
// * `SessionManager` + `BackendRegistry` (runtime/session-manager.js), which builds a
//   `RuntimeKernel` and `AgentRun`s; `toolBoundaryProtocol: 't1_after_preflight_v1'` and the
//   runtime store as the backend's `runtimeCommitSink` for `script.protocol =
//   t1_after_preflight_v1` (exactly the host's wiring); neither for `legacy`, which is upstream's
//   pre-T1 path (call and response as generic appends, no dispatch, no marker);
// * the backend is upstream's real `AiSdkBackend` (runtime/ai-sdk-backend.js) — its tool loop,
//   its `ToolRuntime` preflight, T1 (`commitToolPrepared`) → implementation → T2
//   (`commitToolOutcome`) — over `MockLanguageModelV4` from the `ai` package's `ai/test` (the
//   model double upstream's own tests use), answering model step n with `script.steps[n]`, n =
//   assistant messages already in the prompt. It reports no token usage (a scripted model has
//   none), so upstream writes no tokenUsage observation event;
// * the four tools are `MakaTool`s (runtime/tool-runtime.ts): a zod schema (upstream's zod
//   instance) that also checks workspace confinement, so a bad call is refused by upstream's
//   own preflight before T1; `recoveryMode` per docs/adapter-guide.md §6; the effect-log line
//   written and fsynced before the side effect;
// * repair is `SessionManager.recoverInterruptedSessionsStrict` (the host's startup repair);
//   resume is `planLatestAuthoritativeSafeBoundaryContinuation` /
//   `planAuthoritativeSafeBoundaryContinuation` + `resumeSafeBoundaryContinuation` with
//   `safeBoundaryResumeEnabled: true` and the host's `createLocalContinuationSafetyInspector` over
//   storage's `resolveWorkspaceIdentity` (the `.maka-workspace.json` marker).
//
// Failpoints. Upstream has exactly one crash hook of its own: `continuationFailpoint` (the five
// continuation points of spec 20 §4.9). P0–P11 and the in-transaction store hooks are NOT in
// upstream; the adapter reaches them at the upstream boundaries it owns or can observe, never by
// changing upstream's control flow:
//
// | id  | where (t1_after_preflight_v1)                      | legacy                                    |
// |-----|----------------------------------------------------|-------------------------------------------|
// | P0  | runtimeCommitSink.commitToolPrepared, before       | the tool's `impl`, entry (before P2)*      |
// | P1  | the same call, after it resolved                   | generic append of the call, after it resolved* |
// | P2  | the tool's `impl`, first thing                     | same                                       |
// | P3  | inside `impl`: effect-log line durable, effect half done (temp file / half append / file read) |
// | P4  | commitToolOutcome (T2), before                      | generic append of the response, before     |
// | P5  | T2 resolved                                         | that append resolved                       |
// | P6  | right after P5 (upstream hands the result to the AI SDK step with no boundary in between) |
// | P7  | the model's doStream for a step whose prompt ends with tool results, first thing           |
// | P8  | the terminal RuntimeEvent's append / ensureTerminalRuntimeEventDurable, before             |
// | P9  | AgentRunStore.updateRun to a terminal status, before (turn and continuation)               |
// | P10 | the same, during runtime.repair (repair's terminal fact is durable, header not yet)       |
// | P11 | upstream's continuationFailpoint('after_run_created') (same boundary, spec 20 §4.9)       |
//
// * Upstream's legacy path (no commit sink) starts the implementation *before* the call is
//   durable: ToolRuntime only `queue.push`es the call event (tool-runtime.ts:1045-1055),
//   `prepareDurableToolAttempt` returns undefined without a sink (:1671-1672) and `tool.impl`
//   runs (:1279-1330) while AgentRun appends the queued call later. So legacy P0 sits where
//   preflight has passed and nothing is committed (the implementation's entry), and legacy P1
//   (after the call append) is reached only after the implementation ran: the legacy crash
//   clauses P1-P3 then show upstream's real ordering (README, "Live runtime").
//
// The store hooks (`after_runtime_event_insert`, `after_journal_event_insert`,
// `after_recovery_*`, `after_continuation_claim_insert`, `after_continuation_start_insert`)
// fire *inside* upstream's own SQLite transaction: TEMP triggers (connection-local, never
// written to the database file) on upstream's operational connection call a function
// registered on the same connection (`acquireOperationalStateDatabase(ws).database`).
//
// Announcement (protocol §2.3): `{"failpoint": id}` written synchronously to fd 1, then the
// main thread blocks in `Atomics.wait` (nothing else of the process runs: no event loop, no
// finally, no further write) or, for action `stop`, `kill(getpid(), SIGSTOP)` and carry on.

import { randomUUID } from "node:crypto";
import {
  closeSync, existsSync, fsyncSync, lstatSync, mkdirSync, openSync, readFileSync, readSync, realpathSync,
  renameSync, statSync, unlinkSync, writeSync, constants as fsConstants, fstatSync,
} from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { OpError, invalidParams } from "./errors.mjs";
import { importDist } from "./upstream.mjs";

export const RUNTIME_CAPABILITY_OF = {
  "runtime.run_turn": "runtime.loop",
  "runtime.repair": "runtime.repair",
  "runtime.resume": "runtime.continuation",
  "faults.arm": "faults",
};

/** The failpoint ids this adapter can arm (hello `failpoints`), in protocol order. */
export const LIVE_POINTS = ["P0", "P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "P10", "P11"];
export const CONTINUATION_POINTS = [
  "after_continuation_claim_committed", "after_run_created", "after_continuation_start_committed",
  "after_terminal_event_committed", "after_terminal_header_committed",
];
export const STORE_POINTS = [
  "after_continuation_claim_insert", "after_continuation_start_insert", "after_journal_event_insert",
  "after_recovery_decision", "after_recovery_outcome", "after_recovery_reconcile", "after_runtime_event_insert",
];
const ALL_POINTS = [...LIVE_POINTS, ...STORE_POINTS, ...CONTINUATION_POINTS];
const ACTIONS = ["block", "stop"];

const TOOL_NAMES = ["Append", "Edit", "Read", "Write"];
const EFFECT_LOG = ".maka-effects.jsonl";
const SCRIPTS_DIR = path.join(".maka", "scripts");
/** Workspace entries no tool may name (the store, its WAL, the effect log, the identity marker). */
const RESERVED = new Set([
  "runtime.sqlite", "runtime.sqlite-wal", "runtime.sqlite-shm", "runtime.sqlite-journal",
  ".maka-workspace.json", EFFECT_LOG, ".maka", ".git",
]);
const TERMINAL_RUN = new Set(["completed", "failed", "cancelled"]);
const SETTLE_TIMEOUT_MS = 20_000;

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// loading
// ---------------------------------------------------------------------------------------------

/**
 * The ESM entry of a package upstream's runtime package depends on (`ai/test`, `zod`), resolved
 * from upstream's checkout so that the adapter uses upstream's own copy (one zod instance).
 */
async function importFromUpstream(root, specifier) {
  const require = createRequire(path.join(root, "packages", "runtime", "package.json"));
  const resolved = require.resolve(specifier);
  const parts = specifier.split("/");
  const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
  const subpath = "." + specifier.slice(name.length);
  let dir = path.dirname(resolved);
  for (;;) {
    const pkgFile = path.join(dir, "package.json");
    if (existsSync(pkgFile)) {
      const pkg = JSON.parse(readFileSync(pkgFile, "utf8"));
      if (pkg.name === name) {
        const pick = (entry) => {
          if (typeof entry === "string") return entry;
          if (!isObject(entry)) return undefined;
          return pick(entry.import) ?? pick(entry.default);
        };
        const exported = isObject(pkg.exports) ? pick(pkg.exports[subpath] ?? (subpath === "." ? pkg.exports : undefined)) : undefined;
        return import(pathToFileURL(exported ? path.join(dir, exported) : resolved).href);
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) return import(pathToFileURL(resolved).href);
    dir = parent;
  }
}

/** Every upstream module the runtime operations call; throws when the checkout lacks one. */
export async function loadRuntimeModules(root) {
  const [storage, sessionManager, aiSdkBackend, safety, commitSink, argsIdentity, boundary, aiTest, zod] = await Promise.all([
    importDist(root, "storage", "index"),
    importDist(root, "runtime", "session-manager"),
    importDist(root, "runtime", "ai-sdk-backend"),
    importDist(root, "runtime", "continuation-safety"),
    importDist(root, "runtime", "runtime-commit-sink"),
    importDist(root, "core", "tool-args-identity"),
    importDist(root, "core", "sandbox-boundary"),
    importFromUpstream(root, "ai/test"),
    importFromUpstream(root, "zod"),
  ]);
  for (const [what, value] of [
    ["SessionManager", sessionManager.SessionManager], ["BackendRegistry", sessionManager.BackendRegistry],
    ["AiSdkBackend", aiSdkBackend.AiSdkBackend], ["MockLanguageModelV4", aiTest.MockLanguageModelV4],
    ["simulateReadableStream", aiTest.simulateReadableStream], ["z.object", zod.z?.object],
    ["createLocalContinuationSafetyInspector", safety.createLocalContinuationSafetyInspector],
    ["resolveWorkspaceIdentity", storage.resolveWorkspaceIdentity],
    ["acquireOperationalStateDatabase", storage.acquireOperationalStateDatabase],
    ["buildToolOperationId", commitSink.buildToolOperationId],
    ["canonicalToolArgsHash", argsIdentity.canonicalToolArgsHash],
    ["createExternalExecutionBoundary", boundary.createExternalExecutionBoundary],
  ]) {
    if (typeof value !== "function") throw new Error(`upstream has no ${what}`);
  }
  return { storage, sessionManager, aiSdkBackend, safety, commitSink, argsIdentity, boundary, aiTest, zod: zod.z };
}

// ---------------------------------------------------------------------------------------------
// failpoints (protocol §2.3, §4.4)
// ---------------------------------------------------------------------------------------------

function writeFd(fd, text) {
  const buffer = Buffer.from(text, "utf8");
  let offset = 0;
  while (offset < buffer.length) {
    try {
      offset += writeSync(fd, buffer, offset, buffer.length - offset);
    } catch (error) {
      if (error?.code !== "EAGAIN") throw error;
    }
  }
}

class Failpoints {
  constructor() {
    /** id → {hit, action, count, fired} */
    this.armed = new Map();
  }

  arm(params) {
    const id = params.failpoint;
    if (typeof id !== "string") throw invalidParams("params.failpoint must be a string");
    const hit = params.hit === undefined ? 1 : params.hit;
    if (!Number.isSafeInteger(hit) || hit < 1) throw invalidParams("params.hit must be a positive integer");
    const action = params.action === undefined ? "block" : params.action;
    if (!ACTIONS.includes(action)) throw invalidParams(`params.action must be one of ${ACTIONS.join(", ")}`);
    if (!ALL_POINTS.includes(id)) throw new OpError("unknown_failpoint", `no failpoint ${JSON.stringify(id)}`);
    if (action === "stop" && process.platform === "win32") {
      throw new OpError("fault_action_unsupported", "this platform has no SIGSTOP; only action block is available");
    }
    this.armed.set(id, { hit, action, count: 0, fired: false });
    return { armed: id };
  }

  anyArmed(ids) {
    return ids.some((id) => this.armed.has(id));
  }

  /** Called at the point: counts the hit; at the armed hit announces and blocks or stops. */
  reach(id) {
    const state = this.armed.get(id);
    if (!state || state.fired) return;
    state.count += 1;
    if (state.count !== state.hit) return;
    state.fired = true;
    writeFd(2, `MAKA_FAILPOINT ${id}${state.action === "stop" ? " (stopping)" : ""}\n`);
    writeFd(1, JSON.stringify({ failpoint: id }) + "\n");
    if (state.action === "stop") {
      process.kill(process.pid, "SIGSTOP");
      writeFd(2, `MAKA_FAILPOINT ${id} continued\n`);
      return;
    }
    const cell = new Int32Array(new SharedArrayBuffer(4));
    for (;;) Atomics.wait(cell, 0, 0);
  }
}

// ---------------------------------------------------------------------------------------------
// params and the script (conformance/protocol/script.schema.json)
// ---------------------------------------------------------------------------------------------

function workspaceOf(params) {
  const value = params.workspace;
  if (typeof value !== "string" || value === "") throw invalidParams("params.workspace must be a non-empty string");
  if (value.includes("\0") || !path.isAbsolute(value)) throw invalidParams("params.workspace must be an absolute path");
  let stat;
  try {
    stat = statSync(value);
  } catch {
    throw new OpError("workspace_not_found", `workspace ${value} does not exist`);
  }
  if (!stat.isDirectory()) throw new OpError("workspace_not_a_directory", `workspace ${value} is not a directory`);
  return realpathSync(value);
}

function checkScript(script) {
  const fail = (where, what) => {
    const error = invalidParams(`params.script${where}: ${what}`);
    error.details = { code: "script_invalid" };
    return error;
  };
  if (!isObject(script)) throw fail("", "must be an object");
  for (const key of Object.keys(script)) {
    if (!["userMessage", "protocol", "steps"].includes(key)) throw fail("", `unknown key ${key}`);
  }
  if (typeof script.userMessage !== "string" || script.userMessage === "") throw fail(".userMessage", "must be a non-empty string");
  if (script.protocol !== "t1_after_preflight_v1" && script.protocol !== "legacy") {
    throw fail(".protocol", "must be t1_after_preflight_v1 or legacy");
  }
  if (!Array.isArray(script.steps) || script.steps.length === 0) throw fail(".steps", "must be a non-empty array");
  script.steps.forEach((step, n) => {
    if (!isObject(step)) throw fail(`.steps[${n}]`, "must be an object");
    const keys = Object.keys(step);
    if (keys.length === 1 && keys[0] === "text") {
      if (typeof step.text !== "string" || step.text === "") throw fail(`.steps[${n}].text`, "must be a non-empty string");
      return;
    }
    if (keys.length !== 1 || keys[0] !== "toolCalls") throw fail(`.steps[${n}]`, "must be {text} or {toolCalls}");
    if (!Array.isArray(step.toolCalls) || step.toolCalls.length === 0) throw fail(`.steps[${n}].toolCalls`, "must be a non-empty array");
    step.toolCalls.forEach((call, k) => {
      const where = `.steps[${n}].toolCalls[${k}]`;
      if (!isObject(call)) throw fail(where, "must be an object");
      for (const key of Object.keys(call)) if (!["id", "name", "args"].includes(key)) throw fail(where, `unknown key ${key}`);
      if (typeof call.id !== "string" || call.id === "") throw fail(`${where}.id`, "must be a non-empty string");
      if (typeof call.name !== "string" || call.name === "") throw fail(`${where}.name`, "must be a non-empty string");
      if (!Object.hasOwn(call, "args")) throw fail(`${where}.args`, "is required");
    });
  });
  return script;
}

function scriptPath(workspace, sessionId) {
  return path.join(workspace, SCRIPTS_DIR, `${encodeURIComponent(sessionId)}.json`);
}

/** The script a later `runtime.resume` (maybe in a new process) replays: temp + fsync + rename. */
function writeScriptSidecar(workspace, sessionId, script) {
  const file = scriptPath(workspace, sessionId);
  mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.tmp${process.pid}`;
  const fd = openSync(temp, "w", 0o644);
  try {
    writeFd(fd, JSON.stringify(script));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, file);
}

function readScriptSidecar(workspace, sessionId) {
  try {
    return checkScript(JSON.parse(readFileSync(scriptPath(workspace, sessionId), "utf8")));
  } catch (error) {
    throw new OpError("script_unreadable", `no readable script for session ${sessionId}: ${error?.message ?? error}`);
  }
}

// ---------------------------------------------------------------------------------------------
// the four tools (docs/adapter-guide.md §6)
// ---------------------------------------------------------------------------------------------

class ToolError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "ToolError";
    this.code = code;
  }
}

/** Why `p` is not a confined workspace path (undefined: it is); the realpath rules of the guide. */
function confinementProblem(root, p) {
  if (typeof p !== "string" || p === "") return "Tool path must be a non-empty string";
  if (p.includes("\0") || p.includes("\\")) return "Tool path must not contain NUL or backslash characters";
  if (p.startsWith("/") || path.isAbsolute(p) || /^[A-Za-z]:/.test(p)) return `Tool path must be relative to the workspace: ${p}`;
  const parts = p.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.includes("..")) return `Tool path must not contain '..': ${p}`;
  if (parts.length === 0) return `Tool path names the workspace itself: ${p}`;
  if (RESERVED.has(parts[0].toLowerCase())) return `Tool path names a reserved runtime file: ${p}`;
  // resolve every existing symlink of the prefix (what realpath would do), then re-check
  let resolved = root;
  for (let i = 0; i < parts.length; i++) {
    const candidate = path.join(resolved, parts[i]);
    let link = false;
    try {
      link = lstatSync(candidate).isSymbolicLink();
    } catch {
      resolved = path.join(candidate, ...parts.slice(i + 1));
      break;
    }
    if (link) {
      try {
        resolved = realpathSync(candidate);
      } catch {
        return `Tool path escapes the workspace through a dangling symlink: ${p}`;
      }
    } else {
      resolved = candidate;
    }
  }
  const relative = path.relative(root, resolved);
  if (relative === "" || relative.startsWith("..") || path.isAbsolute(relative)) {
    return `Tool path escapes the workspace through a symlink: ${p}`;
  }
  if (RESERVED.has(relative.split(path.sep)[0].toLowerCase())) return `Tool path resolves to a reserved runtime file: ${p}`;
  return undefined;
}

function confine(root, p) {
  const problem = confinementProblem(root, p);
  if (problem) throw new ToolError("path_not_confined", problem);
  return path.join(root, ...p.split("/").filter((part) => part !== "" && part !== "."));
}

const shown = (p) => p.split("/").filter((part) => part !== "" && part !== ".").join("/");

function fsyncDir(dir) {
  try {
    const fd = openSync(dir, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // best effort (some file systems refuse directory fsync)
  }
}

function regularOrAbsent(target, display) {
  let info;
  try {
    info = lstatSync(target);
  } catch (error) {
    if (error?.code === "ENOENT") return undefined;
    throw new ToolError("io_error", `Cannot stat ${display}: ${error?.message ?? error}`);
  }
  if (!info.isFile()) throw new ToolError("not_a_file", `${display} is not a regular file`);
  return info;
}

function readText(target, display) {
  const fd = openSync(target, fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0));
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw new ToolError("not_a_file", `${display} is not a regular file`);
    if (info.size > 1024 * 1024) throw new ToolError("file_too_large", `${display} is larger than 1 MiB`);
    const chunks = [];
    const buffer = Buffer.alloc(65536);
    for (;;) {
      const n = readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) break;
      chunks.push(Buffer.from(buffer.subarray(0, n)));
    }
    const bytes = Buffer.concat(chunks);
    const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
    try {
      return text.decode(bytes);
    } catch {
      throw new ToolError("not_utf8", `${display} is not UTF-8 text`);
    }
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------
// the session
// ---------------------------------------------------------------------------------------------

export class RuntimeSession {
  /**
   * @param upstream  lib/upstream.mjs `loadUpstream()` result (root)
   * @param stores    the StoreSession of this process (its handles on a workspace are released
   *                  before a runtime operation opens the same files)
   * @param modules   `loadRuntimeModules(upstream.root)` result
   */
  constructor(upstream, stores, modules) {
    this.upstream = upstream;
    this.stores = stores;
    this.m = modules;
    this.failpoints = new Failpoints();
    /** leases held for in-transaction hooks, by database path */
    this.hookLeases = new Map();
  }

  failpointIds() {
    return [...ALL_POINTS];
  }

  operations() {
    return {
      "runtime.run_turn": (params) => this.runTurn(params),
      "runtime.repair": (params) => this.repair(params),
      "runtime.resume": (params) => this.resume(params),
      "faults.arm": (params) => this.failpoints.arm(params),
    };
  }

  // -- in-transaction store hooks -----------------------------------------------------------------

  /** Install the TEMP triggers on the process's operational connection of `workspace` (only when a
   * store hook is armed). Keeps a lease so that a store opened later reuses the same connection. */
  instrument(workspace) {
    if (!this.failpoints.anyArmed(STORE_POINTS)) return;
    try {
      workspace = realpathSync(workspace); // the key lib/store.mjs opens the owner under
    } catch {
      return; // no such workspace: the operation itself answers
    }
    const file = this.m.storage.resolveOperationalStateDatabasePath(workspace);
    if (this.hookLeases.has(file)) return;
    const lease = this.m.storage.acquireOperationalStateDatabase(workspace);
    this.hookLeases.set(file, lease);
    const db = lease.database;
    const reach = (id) => this.failpoints.reach(id);
    db.function("maka_conformance_failpoint", { varargs: true, deterministic: false }, (table, a, b, c) => {
      try {
        if (table === "runtime_events") {
          const event = JSON.parse(b);
          const actions = isObject(event.actions) ? event.actions : {};
          if (isObject(actions.continuationStart)) reach("after_continuation_start_insert");
          const response = event.content?.kind === "function_response" && typeof event.refs?.operationId === "string";
          if (isObject(actions.toolDispatch) || isObject(actions.toolRecovery) || response) reach("after_runtime_event_insert");
        } else if (table === "tool_journal_events") {
          reach("after_journal_event_insert");
          if (a === "reconcile_observed") reach("after_recovery_reconcile");
          else if (a === "outcome_committed" && Number(c) > 0) reach("after_recovery_outcome");
          else if (a === "recovery_completed" || a === "recovery_parked") reach("after_recovery_decision");
        } else if (table === "runtime_continuation_claims") {
          reach("after_continuation_claim_insert");
        }
      } catch (error) {
        writeFd(2, `maka-ts-adapter: failpoint hook: ${error?.stack ?? error}\n`);
      }
      return null;
    });
    db.exec(`
      CREATE TEMP TRIGGER IF NOT EXISTS maka_conformance_fp_events AFTER INSERT ON main.runtime_events
      BEGIN SELECT maka_conformance_failpoint('runtime_events', NEW.event_kind, NEW.payload_json, NULL); END;
      CREATE TEMP TRIGGER IF NOT EXISTS maka_conformance_fp_journal AFTER INSERT ON main.tool_journal_events
      BEGIN SELECT maka_conformance_failpoint('tool_journal_events', NEW.state, NEW.operation_id,
        (SELECT COUNT(*) FROM main.tool_journal_events AS j
          WHERE j.operation_id = NEW.operation_id AND j.state = 'reconcile_observed')); END;
      CREATE TEMP TRIGGER IF NOT EXISTS maka_conformance_fp_claims AFTER INSERT ON main.runtime_continuation_claims
      BEGIN SELECT maka_conformance_failpoint('runtime_continuation_claims', NEW.claim_id, NULL, NULL); END;
    `);
  }

  releaseInstrumentation(workspace) {
    let file;
    try {
      file = this.m.storage.resolveOperationalStateDatabasePath(realpathSync(workspace));
    } catch {
      return;
    }
    const lease = this.hookLeases.get(file);
    if (!lease) return;
    this.hookLeases.delete(file);
    try {
      lease.database.exec(`
        DROP TRIGGER IF EXISTS temp.maka_conformance_fp_events;
        DROP TRIGGER IF EXISTS temp.maka_conformance_fp_journal;
        DROP TRIGGER IF EXISTS temp.maka_conformance_fp_claims;
      `);
    } catch {
      // the connection may already be closing
    }
    lease.close();
  }

  closeAll() {
    for (const lease of this.hookLeases.values()) {
      try {
        lease.close();
      } catch {
        // nothing to do at exit
      }
    }
    this.hookLeases.clear();
  }

  // -- one composition of upstream over a workspace ------------------------------------------------

  /**
   * Opens upstream's stores on `workspace` with the adapter's observation points around them.
   * `phase` is `turn`, `repair` or `resume` (which live points the boundaries stand for). The
   * SessionManager is composed afterwards by `compose(stack, protocol)`, once the run's tool
   * boundary is known.
   */
  async open(workspace, phase) {
    const { storage } = this.m;
    this.instrument(workspace);
    const reach = (id) => this.failpoints.reach(id);
    const inTurn = phase === "turn" || phase === "resume";
    const stack = {
      workspace, phase, protocol: undefined,
      invocationOf: new Map(), // runId → invocationId (from createRun)
      started: new Set(), // provider tool-call ids whose implementation started (this process)
      terminalFactsSeen: new Set(),
      terminalRunEvents: new Set(), // runIds whose terminal AgentRun event was appended
      scripts: new Map(), // sessionId → script
      schemas: this.toolSchemas(workspace),
    };
    const sessionStore = storage.createSessionStore(workspace);
    let runStoreRaw, runtimeRaw;
    try {
      runStoreRaw = storage.createSqliteAgentRunStore(workspace);
      runtimeRaw = storage.createWorkspaceRuntimeStore(workspace);
    } catch (error) {
      runStoreRaw?.close?.();
      await sessionStore.close?.();
      throw error;
    }
    stack.close = async () => {
      const errors = [];
      for (const close of [() => sessionStore.close?.(), () => runStoreRaw.close?.(), () => runtimeRaw.close()]) {
        try {
          await close();
        } catch (error) {
          errors.push(error);
        }
      }
      if (errors.length) writeFd(2, `maka-ts-adapter: closing stores: ${errors.map((e) => e?.message ?? e).join("; ")}\n`);
    };
    stack.hostProtocol = runtimeRaw.toolBoundaryProtocol;

    const isTerminalEvent = (event) => isObject(event) && event.partial !== true && event.actions?.endInvocation === true;
    const admitted = (event) => {
      const schema = stack.schemas[event.content?.name];
      return schema !== undefined && schema.safeParse(event.content?.args).success;
    };
    const legacy = () => inTurn && stack.protocol === "legacy";
    const terminalFact = (event) => {
      if (!inTurn || !isTerminalEvent(event) || stack.terminalFactsSeen.has(event.id)) return;
      stack.terminalFactsSeen.add(event.id);
      reach("P8");
    };
    stack.runtimeEventStore = proxy(runtimeRaw, {
      commitToolPrepared: async (call, input) => {
        if (inTurn) reach("P0");
        const result = await call(input);
        if (inTurn) reach("P1");
        return result;
      },
      commitToolOutcome: async (call, input) => {
        const ours = inTurn && stack.started.has(input?.runtimeEvent?.content?.id);
        if (ours) reach("P4");
        const result = await call(input);
        if (ours) {
          reach("P5");
          reach("P6");
        }
        return result;
      },
      appendRuntimeEvent: async (call, sessionId, runId, event, ...rest) => {
        const kind = event?.content?.kind;
        const final = isObject(event) && event.partial !== true;
        // legacy P0 is reached at the implementation's entry (see `tools`): upstream's legacy
        // path starts the implementation before this append (tool-runtime.ts queue.push)
        const legacyCall = legacy() && final && kind === "function_call" && admitted(event);
        const legacyResponse = legacy() && final && kind === "function_response" && stack.started.has(event.content?.id);
        if (legacyResponse) reach("P4");
        terminalFact(event);
        const result = await call(sessionId, runId, event, ...rest);
        if (legacyCall) reach("P1");
        if (legacyResponse) {
          reach("P5");
          reach("P6");
        }
        return result;
      },
      ensureTerminalRuntimeEventDurable: async (call, sessionId, runId, event, ...rest) => {
        terminalFact(event);
        return call(sessionId, runId, event, ...rest);
      },
    });
    const headerFinals = new Set();
    stack.runStore = proxy(runStoreRaw, {
      createRun: async (call, header, ...rest) => {
        if (isObject(header) && typeof header.runId === "string") {
          stack.invocationOf.set(header.runId, header.invocationId ?? header.runId);
        }
        return call(header, ...rest);
      },
      updateRun: async (call, sessionId, runId, patch, ...rest) => {
        if (isObject(patch) && TERMINAL_RUN.has(patch.status) && !headerFinals.has(runId)) {
          headerFinals.add(runId);
          reach(phase === "repair" ? "P10" : "P9");
        }
        return call(sessionId, runId, patch, ...rest);
      },
      appendEvent: async (call, sessionId, runId, event, ...rest) => {
        const result = await call(sessionId, runId, event, ...rest);
        if (["run_completed", "run_failed", "run_cancelled"].includes(event?.type)) stack.terminalRunEvents.add(runId);
        return result;
      },
    });
    stack.sessionStore = sessionStore;
    return stack;
  }

  /** The host's composition (execution-composition.ts) with the harness's model and tools. */
  compose(stack, protocol) {
    const { storage, sessionManager, aiSdkBackend, safety } = this.m;
    const reach = (id) => this.failpoints.reach(id);
    stack.protocol = protocol;
    const t1 = protocol === "t1_after_preflight_v1";
    const backends = new sessionManager.BackendRegistry();
    backends.register("ai-sdk", (ctx) => new aiSdkBackend.AiSdkBackend({
      sessionId: ctx.sessionId,
      header: ctx.header,
      appendMessage: ctx.appendMessage ?? ((message) => ctx.store.appendMessage(ctx.sessionId, message)),
      readExecutionBoundary: async () => this.m.boundary.createExternalExecutionBoundary(),
      connection: { slug: "maka-conformance-script", providerType: "anthropic", defaultModel: "scripted" },
      apiKey: "scripted",
      modelId: "scripted",
      modelFactory: () => this.scriptedModel(stack, ctx.sessionId),
      tools: this.tools(stack),
      loadTurnRuntimeEvents: ctx.loadTurnRuntimeEvents,
      allowMidTurnHistoryCompaction: ctx.allowMidTurnHistoryCompaction,
      providerRetrySleep: async () => {},
      ...(t1 ? { runtimeCommitSink: stack.runtimeEventStore } : {}),
    }));
    const sessionStore = stack.sessionStore;
    stack.manager = new sessionManager.SessionManager({
      store: sessionStore,
      runStore: stack.runStore,
      runtimeEventStore: stack.runtimeEventStore,
      ...(t1 ? { toolBoundaryProtocol: "t1_after_preflight_v1" } : {}),
      backends,
      newId: randomUUID,
      now: Date.now,
      safeBoundaryResumeEnabled: true,
      inspectContinuationSafety: safety.createLocalContinuationSafetyInspector({
        readSessionCwd: async (sessionId) => (await sessionStore.readHeader(sessionId)).cwd,
        resolveWorkspaceIdentity: async (cwd) => storage.resolveWorkspaceIdentity({ path: cwd }),
        listAvailableToolNames: async () => [...TOOL_NAMES],
        hasPendingBackgroundOperations: async () => false,
      }),
      continuationFailpoint: async (point) => {
        if (point === "after_run_created") reach("P11");
        reach(point);
      },
    });
    return stack.manager;
  }

  /** zod schemas of the tools, by name (strict: an unknown key is a preflight refusal). */
  toolSchemas(root) {
    const { zod: z } = this.m;
    const confined = z.string().min(1).superRefine((value, ctx) => {
      const problem = confinementProblem(root, value);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    });
    return {
      Write: z.object({ path: confined, content: z.string() }).strict(),
      Edit: z.object({ path: confined, old: z.string().min(1), new: z.string() }).strict(),
      Read: z.object({ path: confined }).strict(),
      Append: z.object({ path: confined, content: z.string() }).strict(),
    };
  }

  /** The four MakaTools over `stack.workspace`. */
  tools(stack) {
    const root = stack.workspace;
    const schemas = stack.schemas;
    const reach = (id) => this.failpoints.reach(id);
    const { argsIdentity, commitSink } = this.m;
    const begin = async (name, args, ctx) => {
      stack.started.add(ctx.toolCallId);
      // legacy: upstream has no tool preparation; preflight passed and nothing is committed for
      // this call yet, which is P0's state ("before tool preparation", spec 20 §2)
      if (stack.protocol === "legacy" && (stack.phase === "turn" || stack.phase === "resume")) reach("P0");
      reach("P2");
      const target = confine(root, args.path);
      let operationId = ctx.operationId;
      if (operationId === undefined) {
        // legacy: no T1 identity in the context; spec 30 §0.3 from the run's invocation id
        let invocationId = stack.invocationOf.get(ctx.runId);
        if (invocationId === undefined) {
          invocationId = (await stack.runStore.readRun(ctx.sessionId, ctx.runId).catch(() => undefined))?.invocationId ?? ctx.runId;
        }
        operationId = commitSink.buildToolOperationId({ invocationId, providerToolCallId: ctx.toolCallId });
      }
      const line = JSON.stringify({
        operationId, tool: name, argsHash: argsIdentity.canonicalToolArgsHash(name, args), pid: process.pid,
      }) + "\n";
      const fd = openSync(path.join(root, EFFECT_LOG), "a", 0o644);
      try {
        writeFd(fd, line);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      return { target, operationId };
    };
    const replaceFile = (target, data, operationId, mode) => {
      mkdirSync(path.dirname(target), { recursive: true });
      const temp = path.join(path.dirname(target), `.${path.basename(target)}.${operationId}.tmp`);
      try {
        unlinkSync(temp); // a leftover of an earlier kill at P3 of this operation
      } catch {
        // none
      }
      const fd = openSync(temp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | (fsConstants.O_NOFOLLOW ?? 0), mode);
      try {
        try {
          writeFd(fd, data);
          fsyncSync(fd);
        } finally {
          closeSync(fd);
        }
        reach("P3"); // implementation in progress: the new content is durable, not yet in place
        renameSync(temp, target);
      } catch (error) {
        try {
          unlinkSync(temp);
        } catch {
          // already gone
        }
        throw error;
      }
      fsyncDir(path.dirname(target));
    };
    const io = (name, run) => async (args, ctx) => {
      try {
        return await run(args, ctx);
      } catch (error) {
        if (error instanceof ToolError) throw error;
        throw new ToolError(error?.code === "ENOENT" ? "file_not_found" : "io_error", `${name} failed: ${error?.message ?? error}`);
      }
    };
    return [
      {
        name: "Write",
        description: "Write a whole file in the workspace (parent directories are created).",
        parameters: schemas.Write,
        recoveryMode: "reconcile",
        impl: io("Write", async (args, ctx) => {
          const { target, operationId } = await begin("Write", args, ctx);
          const display = shown(args.path);
          const info = regularOrAbsent(target, display);
          const data = Buffer.from(args.content, "utf8");
          replaceFile(target, data, operationId, info ? info.mode & 0o7777 : 0o644);
          return { path: display, bytesWritten: data.length };
        }),
      },
      {
        name: "Edit",
        description: "Replace the one exact occurrence of `old` with `new` in a workspace file.",
        parameters: schemas.Edit,
        recoveryMode: "never_auto_retry",
        impl: io("Edit", async (args, ctx) => {
          const { target, operationId } = await begin("Edit", args, ctx);
          const display = shown(args.path);
          const info = regularOrAbsent(target, display);
          if (!info) throw new ToolError("file_not_found", `${display} does not exist`);
          const text = readText(target, display);
          const count = text.split(args.old).length - 1;
          if (count === 0) throw new ToolError("edit_target_absent", `The text to replace was not found in ${display}`);
          if (count > 1) {
            throw new ToolError("edit_target_ambiguous", `The text to replace occurs ${count} times in ${display}; it must occur exactly once`);
          }
          const index = text.indexOf(args.old);
          const next = text.slice(0, index) + args.new + text.slice(index + args.old.length);
          replaceFile(target, Buffer.from(next, "utf8"), operationId, info.mode & 0o7777);
          return { path: display, replacements: 1 };
        }),
      },
      {
        name: "Read",
        description: "Read a UTF-8 text file of the workspace.",
        parameters: schemas.Read,
        recoveryMode: "replay_safe",
        impl: io("Read", async (args, ctx) => {
          const { target } = await begin("Read", args, ctx);
          const display = shown(args.path);
          if (!regularOrAbsent(target, display)) throw new ToolError("file_not_found", `${display} does not exist`);
          const content = readText(target, display);
          reach("P3"); // no side effect to leave half done
          return { path: display, content };
        }),
      },
      {
        name: "Append",
        description: "Append text to a workspace file (created if absent).",
        parameters: schemas.Append,
        recoveryMode: "never_auto_retry",
        impl: io("Append", async (args, ctx) => {
          const { target } = await begin("Append", args, ctx);
          const display = shown(args.path);
          regularOrAbsent(target, display);
          mkdirSync(path.dirname(target), { recursive: true });
          const data = Buffer.from(args.content, "utf8");
          const fd = openSync(target, fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_CREAT | (fsConstants.O_NOFOLLOW ?? 0), 0o644);
          try {
            const half = Math.floor(data.length / 2);
            writeFd(fd, data.subarray(0, half));
            fsyncSync(fd);
            reach("P3"); // half of the bytes are appended
            writeFd(fd, data.subarray(half));
            fsyncSync(fd);
          } finally {
            closeSync(fd);
          }
          return { path: display, bytesAppended: data.length };
        }),
      },
    ];
  }

  /** The harness's model: step n of the session's script, n = assistant messages in the prompt. */
  scriptedModel(stack, sessionId) {
    const { MockLanguageModelV4, simulateReadableStream } = this.m.aiTest;
    const reach = (id) => this.failpoints.reach(id);
    const script = () => {
      if (!stack.scripts.has(sessionId)) stack.scripts.set(sessionId, readScriptSidecar(stack.workspace, sessionId));
      return stack.scripts.get(sessionId);
    };
    // A scripted model has no token accounting; reporting none keeps upstream from writing a
    // tokenUsage observation RuntimeEvent (ai-sdk-backend.ts: `sawUnusableStepUsage`).
    const usage = {
      inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: undefined, text: undefined, reasoning: undefined },
    };
    return new MockLanguageModelV4({
      provider: "maka-conformance",
      modelId: "scripted",
      doStream: async (options) => {
        const prompt = Array.isArray(options?.prompt) ? options.prompt : [];
        const n = prompt.filter((message) => message?.role === "assistant").length;
        if (prompt.length > 0 && prompt[prompt.length - 1]?.role === "tool") reach("P7");
        const steps = script().steps;
        if (n >= steps.length) {
          throw new Error(`The script has ${steps.length} step(s) but model step ${n} was requested`);
        }
        const step = steps[n];
        const chunks = [{ type: "stream-start", warnings: [] }];
        if (step.toolCalls) {
          for (const call of step.toolCalls) {
            chunks.push({ type: "tool-call", toolCallId: call.id, toolName: call.name, input: JSON.stringify(call.args ?? null) });
          }
          chunks.push({ type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage });
        } else {
          const id = `text-${n}`;
          chunks.push({ type: "text-start", id }, { type: "text-delta", id, delta: step.text }, { type: "text-end", id });
          chunks.push({ type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage });
        }
        return { stream: simulateReadableStream({ chunks, initialDelayInMs: null, chunkDelayInMs: null }) };
      },
    });
  }

  /**
   * Wait until upstream has finished the run in the background (the terminal header and its
   * AgentRun event are committed after the public stream closes: agent-run.ts commitTerminalRun).
   */
  async settle(stack, sessionId, runId) {
    const deadline = Date.now() + SETTLE_TIMEOUT_MS;
    let graceUntil;
    while (Date.now() < deadline) {
      if (stack.manager.runningTurnIds(sessionId).length === 0) {
        if (runId === undefined || stack.terminalRunEvents.has(runId)) break;
        const header = await stack.runStore.readRun(sessionId, runId).catch(() => undefined);
        if (TERMINAL_RUN.has(header?.status)) {
          graceUntil ??= Date.now() + 300;
          if (Date.now() > graceUntil) break;
        }
      }
      await sleep(10);
    }
    await sleep(30); // let the microtasks after the last commit (continuation hooks) run
  }

  // -- runtime.run_turn -------------------------------------------------------------------------------

  async runTurn(params) {
    const workspace = workspaceOf(params);
    const script = checkScript(params.script);
    const stack = await this.open(workspace, "turn");
    let session, runId, failure;
    try {
      this.compose(stack, script.protocol);
      session = await stack.manager.createSession({
        cwd: workspace,
        llmConnectionSlug: "maka-conformance-script",
        model: "scripted",
        permissionMode: "bypass",
        name: "maka-conformance",
      });
      stack.scripts.set(session.id, script);
      writeScriptSidecar(workspace, session.id, script);
      const turnId = randomUUID();
      try {
        for await (const event of stack.manager.sendMessage(session.id, { turnId, text: script.userMessage }, {
          onRunStarted: (id) => {
            runId = id;
          },
        })) {
          if (event?.type === "error") failure = event.message ?? failure;
        }
      } catch (error) {
        failure = errorDetails(error);
        writeFd(2, `maka-ts-adapter: run_turn: ${error?.stack ?? error}\n`);
      }
      if (runId === undefined) {
        const runs = await stack.runStore.listSessionRuns(session.id);
        runId = runs.find((run) => run.turnId === turnId)?.runId ?? runs[0]?.runId;
      }
      if (runId === undefined) throw new OpError("internal_error", `upstream started no run: ${failure ?? "no error reported"}`);
      await this.settle(stack, session.id, runId);
      return await this.summary(stack, session.id, runId, failure);
    } finally {
      await stack.close();
    }
  }

  /** Protocol §4.3 result of a run, read back from upstream's store. */
  async summary(stack, sessionId, runId, failure) {
    const header = await stack.runStore.readRun(sessionId, runId).catch(() => undefined);
    const events = await stack.runtimeEventStore.readRuntimeEvents(sessionId, runId).catch(() => []);
    const terminal = [...events].reverse().find((event) => event?.actions?.endInvocation === true);
    let status = TERMINAL_RUN.has(header?.status) ? header.status : undefined;
    if (status === undefined && terminal) {
      status = terminal.status === "completed" ? "completed" : terminal.status === "aborted" || terminal.status === "cancelled" ? "cancelled" : "failed";
    }
    status ??= "failed";
    const dispatched = new Set();
    const responses = new Map();
    for (const event of events) {
      const dispatch = event?.actions?.toolDispatch;
      if (isObject(dispatch) && typeof dispatch.providerToolCallId === "string") dispatched.add(dispatch.providerToolCallId);
      if (event?.content?.kind === "function_response") responses.set(event.content.id, event.content);
    }
    const toolCalls = [];
    for (const event of events) {
      if (event?.content?.kind !== "function_call" || event.partial === true) continue;
      const callId = event.content.id;
      const operationId = typeof event.refs?.operationId === "string" ? event.refs.operationId
        : this.m.commitSink.buildToolOperationId({ invocationId: event.invocationId, providerToolCallId: callId });
      const response = responses.get(callId);
      // upstream routes an unknown tool name to its own `invalid` tool (ai-sdk-backend.ts
      // buildInvalidMakaTool), which runs and fails like any tool: not a preflight refusal
      const invalidTool = event.content.name === this.m.aiSdkBackend.INVALID_TOOL_NAME && stack.protocol === "legacy";
      const admitted = dispatched.has(callId) || stack.started.has(callId) || invalidTool;
      const entry = {
        operationId,
        toolName: event.content.name,
        providerToolCallId: callId,
        status: !admitted ? "refused" : response?.isError === true ? "error" : response ? "ok" : "unsettled",
      };
      if (!admitted) entry.boundary = "pre_t1_synthetic";
      toolCalls.push(entry);
    }
    const result = { sessionId, runId, status, toolCalls };
    if (header?.status !== undefined) result.headerStatus = header.status;
    if (failure !== undefined && status !== "completed") {
      if (typeof failure === "string") result.error = failure;
      else Object.assign(result, failure);
    }
    return result;
  }

  // -- runtime.repair ---------------------------------------------------------------------------------

  /** Every run of every session upstream's recovery lists: header status and RuntimeEvents. */
  async snapshot(stack) {
    const out = new Map();
    const sessions = await stack.sessionStore.listForRecovery?.() ?? await stack.sessionStore.list();
    for (const session of sessions) {
      const claimTargets = new Set();
      try {
        for (const state of await stack.runtimeEventStore.listContinuationClaimsForRecovery(session.id)) {
          if (typeof state?.claim?.target?.runId === "string") claimTargets.add(state.claim.target.runId);
        }
      } catch {
        // no continuation authority: no claim targets
      }
      for (const run of await stack.runStore.listSessionRuns(session.id)) {
        const events = await stack.runtimeEventStore.readRuntimeEvents(session.id, run.runId).catch(() => null);
        out.set(JSON.stringify([session.id, run.runId]), {
          sessionId: session.id, runId: run.runId, header: run, status: run.status, events,
          claimTarget: claimTargets.has(run.runId),
        });
      }
    }
    return out;
  }

  /**
   * What upstream's repair did to one run, named by the case of spec 20 §4.5–§4.7 it matches
   * (upstream's `recoverInterruptedSessionsStrict` reports only session ids; the adapter compares
   * each run before and after). Vocabulary: docs/choices/repair.md of the harness.
   */
  static repairAction(then, now) {
    const appended = (now.events?.length ?? 0) - (then?.events?.length ?? 0);
    const terminal = [...(now.events ?? [])].reverse().find((event) => event?.actions?.endInvocation === true);
    if (now.claimTarget && (!then || appended > 0)) return "continuation_claim_abandoned";
    if (then && TERMINAL_RUN.has(then.status)) {
      return appended > 0 ? "missing_terminal_event_repaired" : "header_repaired_from_terminal_event";
    }
    if (appended > 0) return "failed_terminal_appended";
    const delta = terminal?.actions?.stateDelta ?? {};
    const incomplete = terminal && ((terminal.status === "failed" && !delta.failureClass && !terminal.content?.code && !terminal.content?.reason) ||
      (terminal.status === "aborted" && !delta.abortSource));
    return incomplete ? "header_from_incomplete_terminal" : "header_from_terminal_fact";
  }

  async repair(params) {
    const workspace = workspaceOf(params);
    if (!existsSync(this.m.storage.resolveOperationalStateDatabasePath(workspace))) return { repairs: [], skipped: [] };
    const stack = await this.open(workspace, "repair");
    try {
      this.compose(stack, stack.hostProtocol);
      const before = await this.snapshot(stack);
      let recovered;
      try {
        recovered = await stack.manager.recoverInterruptedSessionsStrict({
          sessionStore: stack.sessionStore, agentRunStore: stack.runStore,
        });
      } catch (error) {
        throw new OpError(codeOf(error) ?? "repair_failed", `${error?.name ?? "Error"}: ${error?.message ?? error}`);
      }
      const after = await this.snapshot(stack);
      const repairs = [];
      const skipped = [];
      for (const [key, now] of after) {
        const then = before.get(key);
        const appended = (now.events?.length ?? 0) - (then?.events?.length ?? 0);
        if (then && then.status === now.status && appended === 0 && JSON.stringify(then.header) === JSON.stringify(now.header)) {
          if (!TERMINAL_RUN.has(now.status)) {
            skipped.push({ sessionId: now.sessionId, runId: now.runId, reason: now.claimTarget ? "claim_owned_unsettled" : "not_repaired", headerStatus: now.status });
          }
          continue;
        }
        const terminal = [...(now.events ?? [])].reverse().find((event) => event?.actions?.endInvocation === true);
        const entry = { sessionId: now.sessionId, runId: now.runId, action: RuntimeSession.repairAction(then, now), headerStatus: now.status };
        if (terminal) entry.terminalEventId = terminal.id;
        if (now.header?.failureClass) entry.failureClass = now.header.failureClass;
        if (now.header?.abortSource) entry.abortSource = now.header.abortSource;
        repairs.push(entry);
      }
      return { repairs, skipped, recoveredSessions: recovered };
    } finally {
      await stack.close();
    }
  }

  // -- runtime.resume ---------------------------------------------------------------------------------

  async resume(params) {
    const workspace = workspaceOf(params);
    const sessionId = params.sessionId === undefined || params.sessionId === null ? undefined : params.sessionId;
    if (sessionId !== undefined && (typeof sessionId !== "string" || sessionId === "")) {
      throw invalidParams("params.sessionId must be a non-empty string");
    }
    const park = (reasons, extra = {}) => ({ parked: true, rejectionReasons: reasons, ...extra });
    if (!existsSync(this.m.storage.resolveOperationalStateDatabasePath(workspace))) return park(["resume_candidate_missing"]);
    const stack = await this.open(workspace, "resume");
    try {
      let target = sessionId;
      if (target === undefined) {
        // spec 20 §3.2: the newest session-inline failed/cancelled run of the workspace
        const candidates = [];
        for (const session of await stack.sessionStore.list()) {
          for (const run of await stack.runStore.listSessionRuns(session.id)) {
            if ((run.status === "failed" || run.status === "cancelled") && !run.parentRunId && !run.parentSessionId) {
              candidates.push({ sessionId: session.id, run });
            }
          }
        }
        candidates.sort((a, b) => b.run.createdAt - a.run.createdAt || (b.run.runId < a.run.runId ? -1 : b.run.runId > a.run.runId ? 1 : 0));
        if (candidates.length === 0) return park(["resume_candidate_missing"]);
        target = candidates[0].sessionId;
      }
      // the continuation runs with the source turn's tool boundary (its script sidecar)
      let protocol = stack.hostProtocol;
      try {
        protocol = readScriptSidecar(workspace, target).protocol;
      } catch {
        // no script: the plan below parks or the provider fails the turn
      }
      this.compose(stack, protocol === "legacy" ? "legacy" : "t1_after_preflight_v1");
      const plan = await stack.manager.planLatestAuthoritativeSafeBoundaryContinuation(target);
      if (plan.disposition !== "continue" || !plan.continuation) {
        return park([...(plan.rejectionReasons ?? [])], { sessionId: target, diagnostics: plan.diagnostics ?? [] });
      }
      const continuation = plan.continuation;
      let failure, thrown;
      try {
        for await (const event of stack.manager.resumeSafeBoundaryContinuation(continuation)) {
          if (event?.type === "error") failure = event.message ?? failure;
        }
      } catch (error) {
        // protocol §4.3: a revalidation failure (spec 20 §3.9) is ok:false with its code
        const code = codeOf(error);
        if (code) throw new OpError(code, `${error?.name ?? "Error"}: ${error?.message ?? error}`);
        thrown = error;
        failure = errorDetails(error);
        writeFd(2, `maka-ts-adapter: resume: ${error?.stack ?? error}\n`);
      }
      await this.settle(stack, target, continuation.runId);
      const header = await stack.runStore.readRun(target, continuation.runId).catch(() => undefined);
      if (thrown !== undefined && !TERMINAL_RUN.has(header?.status)) {
        // the continuation threw before its target run ended (or existed): an error, not a run
        throw new OpError("internal_error", `${thrown?.name ?? "Error"}: ${thrown?.message ?? thrown}`, {
          targetRunId: continuation.runId, targetHeaderStatus: header?.status ?? null, errors: failure.errors,
        });
      }
      const run = await this.summary(stack, target, continuation.runId, failure);
      return {
        parked: false, sessionId: target, sourceRunId: continuation.sourceRunId, targetRunId: continuation.runId,
        status: run.status, run,
      };
    } finally {
      await stack.close();
    }
  }

}

/**
 * What a turn that threw reports: the top error's text and, for every error of its cause chain
 * (`cause`, AggregateError `errors`), its name, message and spec code where upstream gave one.
 */
function errorDetails(error) {
  const errors = [];
  const seen = new Set();
  const visit = (value, depth) => {
    if (value === null || typeof value !== "object" || seen.has(value) || depth > 6) return;
    seen.add(value);
    const code = codeOf(value) ?? (value.name === "RunSealedError" ? "run_sealed" : undefined);
    errors.push({ name: String(value.name ?? "Error"), message: String(value.message ?? ""), ...(code ? { code } : {}) });
    visit(value.cause, depth + 1);
    if (Array.isArray(value.errors)) for (const item of value.errors) visit(item, depth + 1);
  };
  visit(error, 0);
  return { error: `${error?.name ?? "Error"}: ${error?.message ?? error}`, errors };
}

/** A snake_case `.code` upstream put on an error (revalidation and store errors carry one). */
function codeOf(error) {
  const code = error?.code;
  return typeof code === "string" && /^[a-z][a-z0-9]*(_[a-z0-9]+)+$/.test(code) ? code : undefined;
}

/**
 * `target` with some methods wrapped: `hooks[name](call, ...args)` where `call` is the original
 * bound to `target` (upstream's classes keep `#private` state, so every method runs on the real
 * instance; the kernel sees an object with the same methods and properties).
 */
function proxy(target, hooks) {
  return new Proxy(target, {
    get(object, key) {
      const value = Reflect.get(object, key, object);
      if (typeof value !== "function") return value;
      const bound = value.bind(object);
      const hook = Object.hasOwn(hooks, key) ? hooks[key] : undefined;
      return hook ? (...args) => hook(bound, ...args) : bound;
    },
  });
}
