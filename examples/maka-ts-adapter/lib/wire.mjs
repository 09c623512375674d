// Framing of the maka-conformance wire protocol (docs/protocol.md §1.3, §2).
//
// Why not `node:readline`: since Node 24 its line splitting also breaks at U+2028 and U+2029,
// and the harness sends those characters raw inside JSON strings (they are legal JSON). A
// request split there is two lines of garbage. So lines are cut at the byte 0x0A only, on the
// raw bytes, and decoded as UTF-8 afterwards.

/** Protocol §1.3: a line MUST NOT exceed 16 MiB. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/**
 * Calls `onLine(text)` for every `\n`-terminated line of `stream` (a trailing `\r` is dropped),
 * `onOverflow()` once for a line longer than `maxBytes` (its bytes are discarded up to the next
 * newline, so memory stays bounded), and `onEnd()` at end of input. An unterminated last line
 * is delivered too.
 */
export function readLines(stream, { onLine, onOverflow, onEnd, maxBytes = MAX_LINE_BYTES }) {
  let chunks = [];
  let size = 0;
  let discarding = false;
  const emit = (buffer) => {
    let text = buffer.toString("utf8");
    if (text.endsWith("\r")) text = text.slice(0, -1);
    onLine(text);
  };
  stream.on("data", (chunk) => {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl === -1) break;
      const piece = chunk.subarray(start, nl);
      if (discarding) {
        discarding = false;
      } else if (size + piece.length > maxBytes) {
        onOverflow();
      } else {
        chunks.push(piece);
        emit(Buffer.concat(chunks, size + piece.length));
      }
      chunks = [];
      size = 0;
      start = nl + 1;
    }
    const rest = chunk.subarray(start);
    if (rest.length === 0 || discarding) return;
    if (size + rest.length > maxBytes) {
      chunks = [];
      size = 0;
      discarding = true;
      onOverflow();
      return;
    }
    chunks.push(Buffer.from(rest));
    size += rest.length;
  });
  stream.on("end", () => {
    if (size > 0 && !discarding) emit(Buffer.concat(chunks, size));
    onEnd();
  });
}

/**
 * JSON text of a protocol message. Like `JSON.stringify` (keys whose value is `undefined` are
 * left out, as the spec's "absent" fields are), except that `-0` is written `-0.0` so a double
 * parser reads negative zero back (a decoded event may hold `-0`: decode does no round trip),
 * and ±Infinity is written ±1e400 (JSON has no other spelling for it).
 */
export function writeJson(value) {
  if (value === null || value === undefined) return "null";
  switch (typeof value) {
    case "number":
      if (Object.is(value, -0)) return "-0.0";
      if (value === Infinity) return "1e400";
      if (value === -Infinity) return "-1e400";
      return Number.isNaN(value) ? "null" : JSON.stringify(value);
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "bigint":
      return value.toString();
    case "object": {
      if (Array.isArray(value)) return "[" + value.map(writeJson).join(",") + "]";
      if (typeof value.toJSON === "function") return writeJson(value.toJSON());
      const parts = [];
      for (const key of Object.keys(value)) {
        const item = value[key];
        if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
        parts.push(JSON.stringify(key) + ":" + writeJson(item));
      }
      return "{" + parts.join(",") + "}";
    }
    default:
      return "null";
  }
}

/** A value with every `undefined`-valued key removed, as it would be sent (for comparisons). */
export function plain(value) {
  return JSON.parse(writeJson(value));
}
