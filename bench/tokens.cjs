// Counts the tokens a tools/list costs a model, as ../shared/tools/count-tokens does: the JSON of
// {name, description, input_schema} per tool, and of the whole list, with OpenAI's o200k_base
// tokenizer (npm `tiktoken`, whose ranks ship inside the package).
//
//   node bench/tokens.cjs < tools.json      tools.json: the `tools` array of a tools/list result
//
// Prints {"tokens": T, "per_tool": [{"name": N, "tokens": t}, ...]}. bench.py installs tiktoken
// on first use (see bench/README.md) and sets NODE_PATH.
const { Tiktoken } = require("tiktoken/lite");
const o200k = require("tiktoken/encoders/o200k_base.json");
const enc = new Tiktoken(o200k.bpe_ranks, o200k.special_tokens, o200k.pat_str);

let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  if (process.argv[2] === "--texts") {
    // node bench/tokens.cjs --texts < texts.json: a JSON array of strings; prints their counts.
    console.log(JSON.stringify(JSON.parse(input).map((t) => enc.encode(t).length)));
    return;
  }
  const tools = JSON.parse(input);
  const visible = (t) => ({ name: t.name, description: t.description || "", input_schema: t.inputSchema || {} });
  const perTool = tools.map((t) => ({ name: t.name, tokens: enc.encode(JSON.stringify(visible(t))).length }));
  const tokens = enc.encode(JSON.stringify(tools.map(visible))).length;
  console.log(JSON.stringify({ tokens, per_tool: perTool }));
});
