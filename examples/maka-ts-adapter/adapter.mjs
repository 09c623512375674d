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
import { checkNode, loadUpstream, SetupError, upstreamCommit, upstreamRoot, upstreamVersion } from "./lib/upstream.mjs";
import { readLines, writeJson } from "./lib/wire.mjs";

const PROTOCOL_VERSION = 1;
/** Every capability this adapter can claim, in the protocol's order (docs/protocol.md §3). */
const CAPABILITIES = ["ledger.codec", "ledger.resolver", "ledger.plan", "store", "store.continuation"];
/** Every protocol operation and its capability (an unclaimed one answers `not_claimed`). */
const CAPABILITY_OF = {
  ...LEDGER_CAPABILITY,
  ...Object.fromEntries(STORE_OPERATIONS.map((op) => [op, op.includes("continuation") ? "store.continuation" : "store"])),
  "runtime.run_turn": "runtime.loop",
  "runtime.repair": "runtime.repair",
  "runtime.resume": "runtime.continuation",
  "faults.arm": "faults",
};

function claimsFrom(argv) {
  const index = argv.findIndex((arg) => arg === "--claim" || arg.startsWith("--claim="));
  if (index === -1) return CAPABILITIES;
  const value = argv[index].includes("=") ? argv[index].split("=")[1] : argv[index + 1] ?? "";
  const wanted = value.split(",").filter(Boolean);
  const unknown = wanted.filter((name) => !CAPABILITIES.includes(name));
  if (unknown.length) throw new SetupError(`cannot claim ${unknown.join(", ")}; this adapter offers ${CAPABILITIES.join(", ")}`);
  return CAPABILITIES.filter((name) => wanted.includes(name));
}

const out = (message) => process.stdout.write(writeJson(message) + "\n");

async function main() {
  const argv = process.argv.slice(2);
  let claims, upstream;
  try {
    checkNode();
    claims = claimsFrom(argv);
    upstream = await loadUpstream(upstreamRoot(argv));
  } catch (error) {
    process.stderr.write(`maka-ts-adapter: ${error instanceof SetupError ? error.message : error?.stack ?? error}\n`);
    process.exit(2);
  }
  const implementation = {
    name: "maka-agent",
    version: `${upstreamVersion(upstream.root)}+${upstreamCommit(upstream.root).slice(0, 9)}`,
  };
  const stores = new StoreSession(upstream);
  const handlers = { ...ledgerOperations(upstream), ...stores.operations() };

  function hello(params) {
    const version = params?.protocol;
    if (!Number.isSafeInteger(version)) throw invalidParams("params.protocol must be an integer");
    if (version !== PROTOCOL_VERSION) {
      throw new OpError("protocol_version_unsupported", `this adapter speaks protocol ${PROTOCOL_VERSION}, not ${version}`);
    }
    return { protocol: PROTOCOL_VERSION, implementation, capabilities: claims };
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
      process.exit(0);
    }),
  });
}

main();
