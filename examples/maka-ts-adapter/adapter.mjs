#!/usr/bin/env node
// maka-conformance protocol-v1 adapter for the upstream Maka runtime (maka-agent/maka-agent,
// packages core, storage and runtime), so that the harness can certify the implementation the
// spec was written from. Plain ESM JavaScript; it imports upstream's *built* modules from the
// checkout named by `--upstream DIR` (or MAKA_UPSTREAM) and contains none of upstream's code.
//
//   node examples/maka-ts-adapter/adapter.mjs --upstream /path/to/maka-agent [--claim a,b,...]
//
// See README.md for building upstream and for what each capability maps onto.

import { errorValue, invalidParams, OpError } from "./lib/errors.mjs";
import { LEDGER_CAPABILITY, ledgerOperations } from "./lib/ledger.mjs";
import { STORE_OPERATIONS, StoreSession } from "./lib/store.mjs";
import { loadRuntimeModules, RUNTIME_CAPABILITY_OF, RuntimeSession } from "./lib/runtime.mjs";
import { checkNode, loadUpstream, SetupError, upstreamCommit, upstreamRoot, upstreamVersion } from "./lib/upstream.mjs";
import { readLines, writeJson } from "./lib/wire.mjs";

const PROTOCOL_VERSION = 1;
/** Every capability this adapter can claim, in the protocol's order (docs/protocol.md §3). */
const CAPABILITIES = ["ledger.codec", "ledger.resolver", "ledger.plan", "store", "store.continuation"];
/** Offered only when upstream's runtime modules load (lib/runtime.mjs). */
const RUNTIME_CAPABILITIES = ["runtime.loop", "runtime.repair", "runtime.continuation", "faults"];
/** Every protocol operation and its capability (an unclaimed one answers `not_claimed`). */
const CAPABILITY_OF = {
  ...LEDGER_CAPABILITY,
  ...Object.fromEntries(STORE_OPERATIONS.map((op) => [op, op.includes("continuation") ? "store.continuation" : "store"])),
  ...RUNTIME_CAPABILITY_OF,
};

function claimsFrom(argv, offered) {
  const index = argv.findIndex((arg) => arg === "--claim" || arg.startsWith("--claim="));
  if (index === -1) return offered;
  const value = argv[index].includes("=") ? argv[index].split("=")[1] : argv[index + 1] ?? "";
  const wanted = value.split(",").filter(Boolean);
  const unknown = wanted.filter((name) => !offered.includes(name));
  if (unknown.length) throw new SetupError(`cannot claim ${unknown.join(", ")}; this adapter offers ${offered.join(", ")}`);
  return offered.filter((name) => wanted.includes(name));
}

/**
 * How this adapter's files are made durable (protocol §3 `durability`; clause STORE-DURABILITY-001,
 * issue 15 item 4). Upstream's runtime store is SQLite in WAL mode with `synchronous = FULL`
 * (packages/storage/src/sqlite-runtime-schema.ts:331 at f19eede03) and sets no `fullfsync`, so on
 * macOS a commit reaches only the drive's cache; the adapter's script sidecars are fsynced and
 * renamed without a directory fsync (lib/runtime.mjs, writeScriptSidecar), hence
 * `directorySync: false` (SQLite syncs the directory of the journals it creates itself).
 */
const DURABILITY = {
  sync: "fsync",
  directorySync: false,
  details: "upstream SQLite in WAL mode with synchronous=FULL; script sidecars fsynced, renamed without a directory fsync"
    + (process.platform === "darwin" ? "; on macOS fsync does not reach the disk (no PRAGMA fullfsync upstream)" : ""),
};

const out = (message) => process.stdout.write(writeJson(message) + "\n");

async function main() {
  const argv = process.argv.slice(2);
  let claims, upstream, runtimeModules;
  try {
    checkNode();
    upstream = await loadUpstream(upstreamRoot(argv));
    try {
      runtimeModules = await loadRuntimeModules(upstream.root);
    } catch (error) {
      // the ledger and store capabilities do not need the runtime package's live modules
      process.stderr.write(`maka-ts-adapter: runtime capabilities unavailable: ${error?.stack ?? error}\n`);
    }
    claims = claimsFrom(argv, runtimeModules ? [...CAPABILITIES, ...RUNTIME_CAPABILITIES] : CAPABILITIES);
  } catch (error) {
    process.stderr.write(`maka-ts-adapter: ${error instanceof SetupError ? error.message : error?.stack ?? error}\n`);
    process.exit(2);
  }
  const commit = upstreamCommit(upstream.root);
  const implementation = {
    name: "maka-agent",
    version: `${upstreamVersion(upstream.root)}+${commit.slice(0, 9)}`,
    commit,
    node: process.versions.node,
  };
  const stores = new StoreSession(upstream);
  const runtime = runtimeModules ? new RuntimeSession(upstream, stores, runtimeModules) : undefined;
  const handlers = { ...ledgerOperations(upstream), ...stores.operations(), ...(runtime?.operations() ?? {}) };
  if (runtime) {
    // The in-transaction store hooks (faults.arm after_runtime_event_insert, …) also fire inside
    // the store operations' own T1/T2/bundle writes: instrument the workspace's connection first.
    for (const op of ["store.open", "store.append", "store.commit_tool_prepared", "store.commit_tool_outcome",
      "store.commit_recovery_bundle", "store.create_run", "store.update_run"]) {
      const handler = handlers[op];
      handlers[op] = async (params) => {
        if (op !== "store.open" || params?.readOnly !== true) {
          try {
            if (typeof params?.workspace === "string" && params.workspace !== "") runtime.instrument(params.workspace);
          } catch (error) {
            process.stderr.write(`maka-ts-adapter: failpoint instrumentation of ${params.workspace}: ${error?.message ?? error}\n`);
          }
        }
        return handler(params);
      };
    }
    const close = handlers["store.close"];
    handlers["store.close"] = async (params) => {
      const result = await close(params);
      if (typeof params?.workspace === "string") runtime.releaseInstrumentation(params.workspace);
      return result;
    };
  }

  function hello(params) {
    const version = params?.protocol;
    if (!Number.isSafeInteger(version)) throw invalidParams("params.protocol must be an integer");
    if (version !== PROTOCOL_VERSION) {
      throw new OpError("protocol_version_unsupported", `this adapter speaks protocol ${PROTOCOL_VERSION}, not ${version}`);
    }
    const result = { protocol: PROTOCOL_VERSION, implementation, capabilities: claims, durability: DURABILITY };
    if (runtime && claims.includes("faults")) result.failpoints = runtime.failpointIds();
    return result;
  }

  /** One operation: `{ok: true, result}` or `{ok: false, error}`; never throws. */
  async function handle(op, params) {
    try {
      if (op === "hello") return { ok: true, result: hello(params) };
      if (op === "batch") return { ok: true, result: await batch(params) };
      const capability = typeof op === "string" && Object.hasOwn(CAPABILITY_OF, op) ? CAPABILITY_OF[op] : undefined;
      if (capability === undefined) throw new OpError("unknown_op", `no operation ${String(op)}`);
      if (!claims.includes(capability) || !handlers[op]) {
        throw new OpError("not_claimed", `capability ${capability} of ${op} is not claimed`);
      }
      return { ok: true, result: await handlers[op](params) };
    } catch (error) {
      return { ok: false, error: errorValue(error) };
    }
  }

  /** Protocol §4.5: each item answered exactly as if sent alone, in order. */
  async function batch(params) {
    if (!Array.isArray(params?.requests)) throw invalidParams("params.requests must be an array");
    const responses = [];
    for (const [index, item] of params.requests.entries()) {
      if (item === null || typeof item !== "object" || Array.isArray(item) || typeof item.op !== "string") {
        responses.push({ ok: false, error: errorValue(invalidParams(`requests[${index}] must be an object with a string op`)) });
      } else if (item.op === "hello" || item.op === "batch") {
        responses.push({ ok: false, error: errorValue(invalidParams(`requests[${index}]: ${item.op} cannot be batched`)) });
      } else {
        const itemParams = Object.hasOwn(item, "params") ? item.params : {};
        if (itemParams === null || typeof itemParams !== "object" || Array.isArray(itemParams)) {
          responses.push({ ok: false, error: errorValue(invalidParams(`requests[${index}].params must be an object`)) });
        } else {
          responses.push(await handle(item.op, itemParams));
        }
      }
    }
    return { responses };
  }

  // Requests are answered strictly one after another (store operations are asynchronous).
  let chain = Promise.resolve();
  const enqueue = (work) => {
    chain = chain.then(work).catch((error) => process.stderr.write(`maka-ts-adapter: ${error?.stack ?? error}\n`));
  };

  readLines(process.stdin, {
    onLine: (line) => enqueue(async () => {
      if (line.trim() === "") return;
      let request;
      try {
        request = JSON.parse(line);
      } catch {
        return out({ id: null, ok: false, error: { code: "invalid_params", message: "the request line is not JSON" } });
      }
      if (request === null || typeof request !== "object" || Array.isArray(request) || !Number.isSafeInteger(request.id) || request.id < 0) {
        return out({ id: null, ok: false, error: { code: "invalid_params", message: "the request has no usable id" } });
      }
      const params = Object.hasOwn(request, "params") ? request.params : {};
      if (params === null || typeof params !== "object" || Array.isArray(params)) {
        return out({ id: request.id, ok: false, error: { code: "invalid_params", message: "params must be an object" } });
      }
      out({ id: request.id, ...(await handle(request.op, params)) });
    }),
    onOverflow: () => enqueue(() => out({ id: null, ok: false, error: { code: "invalid_params", message: "request line longer than 16 MiB" } })),
    onEnd: () => enqueue(async () => {
      await stores.closeAll();
      runtime?.closeAll();
      process.exit(0);
    }),
  });
}

main();
