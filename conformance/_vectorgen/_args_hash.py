"""Vectors of ``args-hash.json``: canonicalArgsHash (spec 10 §2.6, §7.1).

The 25 rows of the §2.6 table plus the equalities and refusals the spec states. Separate
because the hash table is self-contained and long.
"""

from __future__ import annotations

from typing import Any

from ._common import err, STRICT_ARGS_MESSAGE, vec


# ---------------------------------------------------------------------------------------
# args-hash.json — 10 §2.6, §7.1
# ---------------------------------------------------------------------------------------

#: The 25 rows of the 10 §2.6 vector table: (slug, toolName, args JSON text, hash, scenario).
ARGS_HASH_ROWS: list[tuple[str, str, str, str, str]] = [
    ("write-notes", "Write", '{"content":"after","path":"notes.txt"}',
     "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9", "#1, #3"),
    ("x-path-prepared", "X", '{"path":"prepared.txt"}',
     "sha256:b10a9dfa507aac2940a27bdd3670fd7582d52705de906eb13c1ab37b553031e1", "#3"),
    ("x-required-sorted", "X", '{"required":["b","a"]}',
     "sha256:0002fcd132216e3442d4ab7579d9659019019c6b7000456fbef198b7ae53ee43", "#3"),
    ("x-nested-enum-sorted", "X", '{"nested":{"enum":["z","a"]}}',
     "sha256:a1545a7c4bb9197d99d49327067d31da23188091e1bf6641e2a1698d9a906eca", "#3"),
    ("x-proto-dropped", "X", '{"__proto__":{"admin":true}}',
     "sha256:ad5ecbd9c66b763ad3505d4ac9ddc7a86cffcecd8fd7f2c0ffb342c34da285e9", "#3, #4"),
    ("x-ordinary-array-kept", "X", '{"ordinaryArray":["b","a"]}',
     "sha256:4b6be45e18e1a7c6566dd72a0fa0c01b0f059bb3128ecd7a3265d5221f7b8351", "#3"),
    ("bash-do-it", "Bash", '{"command":"do-it"}',
     "sha256:83f3a7d12c96b30b1e7b8e8afc4e13829dc19a0fa0f893647a0e31375b0a0669", "#7"),
    ("write-empty", "Write", "{}",
     "sha256:9a3dd70ae85e22878030f346a283f4c208e57b432eed170a0143773fd334c9f6", "#7"),
    ("read-empty", "Read", "{}",
     "sha256:98f17b72526ca658f49b9421e725a2642b943a4e0cd249bebf931651e319dfe6", "#7"),
    ("exec-code", "exec", '{"code":"work()"}',
     "sha256:5d33ee1b4806339e8bb1a78a077da0c023ab0dbfc6caa45a47aaf06440c3d761", "#7"),
    ("write-other", "Write", '{"path":"other.txt","content":"after"}',
     "sha256:776ff7572abe4410f51c37b0b046025300d9c5e5aebb1412b502276194e7e838", "#7"),
    ("read-prepared", "Read", '{"path":"prepared.txt"}',
     "sha256:5949a5bf23e5928b160ea0444cd16391f47365c3cd8b6d33a7381d585baf1db2", "#7"),
    ("collation-case", "X", '{"required":["B","a","b","A"]}',
     "sha256:a4e3053a4c26254b5652a507fe66787ff36b2412ebb3a19b0f2f5a9e981c5984", "#7"),
    ("collation-punctuation-digits", "X", '{"required":["a-b","ab","a_b","a b","a1","a10","a2"]}',
     "sha256:fe91ba6cfcc6f430333ad4e16891b30da45798be6cc37070802d21250c97c88e", "#7"),
    ("collation-mixed-types", "X", '{"enum":[10,9,1,"x",null,true]}',
     "sha256:cc5a983d5392f0168a2cfdc45bf5b16cded378e9549877a8fffc5b6eb0786c55", "#7"),
    ("collation-nested-arrays", "X", '{"required":[["b"],["a"]]}',
     "sha256:a8cb62a4ce0ba52e2b91c4b423565446aca635b9d98b296da4d12af3cb15d226", "#7"),
    ("required-object-nested-enum", "X", '{"required":{"enum":["b","a"]}}',
     "sha256:d538d428c1fb4256c7db06e101af5a2ffcfbf835bcce6710f5a912d5875a8a83", "#7"),
    ("number-text", "X", '{"n":1.0,"f":1.5,"big":1e21,"small":1e-7}',
     "sha256:fd79b143265ed94d2096cf6f698529a6f4051c0dc4dca05ebe53ce2e306d8b87", "#7"),
    ("utf16-key-order", "X", r'{"é":1,"z":2,"Z":3,"\ud83d\ude00":4,"\uff01":5}',
     "sha256:8936508bc7caeb62d3e746e5c1595fcbbaabc6669ce21ecde64c4ae6f898348f", "#7"),
    ("string-escapes", "X", r'{"s":"line\nbreak\u0001\u007f\u2028\"\\/"}',
     "sha256:866256c3ba406edde80cc112c0172cded11549e8e8127ba30abfb395e20f126f", "#7"),
    ("array-args", "X", '[1,{"b":1,"a":2}]',
     "sha256:fe52842902f94e18319df60a587073958e67425c37c8a51970bd94a73d499e94", "#7"),
    ("string-args", "X", '"plain string args"',
     "sha256:46a9a7e2e69f16e4623c2293de7832aadd1e2d67e1f89621e8ca34aaf037ca52", "#7"),
    ("null-args", "X", "null",
     "sha256:6dc46f9f4e99c4224c2be66356156527206902d447ad81837d2cf33b835329fb", "#7"),
    ("big-integer-double", "X", '{"big":12345678901234567890}',
     "sha256:c62174887c26654d600658e60826423ec0a07f2af9ce51d98f74c926f806873a", "#7"),
    ("array-index-key-order", "X", '{"b":1,"10":2,"2":3,"a":4,"01":5,"-1":6,"4294967294":7,"4294967295":8,"1.5":9}',
     "sha256:3fbf2fda5e82c573a7673bbb2cdf31e998d35a3001a022bcb2fe48378848c689", "#7"),
]

ARGS_HASH_NOTES = {
    "write-notes": "the hash of Write with content/path in this key order",
    "number-text": "numbers print as ECMAScript text: body {\"args\":{\"big\":1e+21,\"f\":1.5,\"n\":1,\"small\":1e-7},\"toolName\":\"X\"}",
    "utf16-key-order": "object keys sort by UTF-16 code units: body key order Z, z, é, 😀, ！",
    "collation-case": "strings under required sort by ICU root collation: [\"a\",\"A\",\"b\",\"B\"]",
    "collation-punctuation-digits": "ICU root collation: [\"a b\",\"a_b\",\"a-b\",\"a1\",\"a10\",\"a2\",\"ab\"]",
    "collation-mixed-types": "elements under enum sort by collating their JSON text: [\"x\",1,10,9,null,true]",
    "collation-nested-arrays": "array elements under required sort by their JSON text: [[\"a\"],[\"b\"]]",
    "big-integer-double": "the integer parses as a double and the body prints 12345678901234567000",
    "array-index-key-order": "array-index keys first in numeric order, then the rest by UTF-16 order",
    "x-proto-dropped": "a key named __proto__ is skipped by the hash canonicalisation",
    "x-ordinary-array-kept": "arrays not under required/enum keep their order",
    "required-object-nested-enum": "an object under required is not sorted; the enum array inside it is",
}


def group_args_hash() -> tuple[str, str, list[dict[str, Any]]]:
    vs: list[dict[str, Any]] = []
    for slug, tool, args_json, digest, scen in ARGS_HASH_ROWS:
        note = ARGS_HASH_NOTES.get(slug, "anchor-produced vector")
        vs.append(vec(
            f"args-hash/{slug}", f"10 §2.6 table; 10 §7.1 {scen}",
            f"canonicalArgsHash({tool}, {args_json}): {note}.",
            "args_hash", {"toolName": tool, "argsJson": args_json}, {"hash": digest},
        ))
    vs.insert(1, vec(
        "args-hash/write-notes-other-key-order", "10 §2.6 table row 1; 10 §7.1 #1",
        "The Write vector hashes the same whatever the key order of the arguments.",
        "args_hash", {"toolName": "Write", "argsJson": '{"path":"notes.txt","content":"after"}'},
        {"hash": "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9"},
    ))
    vs += [
        vec("args-hash/x-empty-object-equals-proto", "10 §2.6 (\"{\\\"__proto__\\\":…} hash like {}\"); 10 §7.1 #4",
            "Empty arguments hash like arguments holding only a __proto__ key.",
            "args_hash", {"toolName": "X", "argsJson": "{}"},
            {"hash": "sha256:ad5ecbd9c66b763ad3505d4ac9ddc7a86cffcecd8fd7f2c0ffb342c34da285e9"}),
        vec("args-hash/nested-proto-dropped", "10 §2.6; 10 §7.1 #4",
            "A nested __proto__ key is skipped too, so the arguments hash like {\"nested\":{}}.",
            "args_hash", {"toolName": "X", "argsJson": '{"nested":{"__proto__":{"admin":true}}}'},
            {"sameHashAs": {"toolName": "X", "argsJson": '{"nested":{}}'}}),
        vec("args-hash/proto-dropped-before-collation", "10 §2.6 step 3",
            "Elements under required are sorted by their JSON text after __proto__ keys are dropped.",
            "args_hash", {"toolName": "X", "argsJson": '{"required":[{"__proto__":{"z":1},"b":1},{"a":1}]}'},
            {"sameHashAs": {"toolName": "X", "argsJson": '{"required":[{"a":1},{"b":1}]}'}}),
        vec("args-hash/negative-zero-hashes-as-zero", "10 §2.4",
            "In the args hash (unlike event encoding) -0 is accepted and printed as 0.",
            "args_hash", {"toolName": "X", "argsJson": '{"v":-0}'},
            {"sameHashAs": {"toolName": "X", "argsJson": '{"v":0}'}}),
        vec("args-hash/empty-tool-name", "10 §2.6 step 1 and \"Errors\"; 10 §7.1 #7",
            "An empty tool name is refused with the \"requires a tool name\" error.",
            "args_hash", {"toolName": "", "argsJson": "{}"},
            {"error": {"messageContains": "requires a tool name"}}),
        vec("args-hash/positive-infinity", "10 §2.6 \"Errors\"; 10 §7.1 #2",
            "A number literal that overflows to +Infinity as a double is not strict JSON.",
            "args_hash", {"toolName": "X", "argsJson": '{"v":1e400}'}, err(STRICT_ARGS_MESSAGE)),
        vec("args-hash/negative-infinity", "10 §2.6 \"Errors\"; 10 §7.1 #2",
            "A number literal that overflows to -Infinity as a double is not strict JSON.",
            "args_hash", {"toolName": "X", "argsJson": '{"v":[-1e400]}'}, err(STRICT_ARGS_MESSAGE)),
    ]
    return "args-hash", (
        "canonicalArgsHash (spec 10 §2.6): the 25 anchor-produced vectors of the table, equalities the "
        "spec states without a value, and the two refusal messages."
    ), vs
