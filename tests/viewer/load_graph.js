// Run circuit-tracer's own frontend data loader (utilCg.formatData, attribution_graph/util-cg.js) on an exported
// graph, as the viewer does after fetching it; print a JSON summary of what the viewer would draw.
// Usage: node load_graph.js <circuit-tracer frontend assets dir> <d3 v7 + jetpack bundle> <graph.json>
// This file is symuat's test harness; circuit-tracer's files are read from the given folder, never copied here.
"use strict";
const fs = require("fs");
const path = require("path");
const vm = require("vm");

async function main() {
  const [assets, d3Bundle, graphPath] = process.argv.slice(2);
  const url = "http://localhost/index.html?slug=test";
  const ctx = {
    console, URL, URLSearchParams, setTimeout, clearTimeout, Promise,
    location: new URL(url),
    history: { replaceState() {} },
    localStorage: { getItem() { return null; }, setItem() {}, removeItem() {} },
  };
  ctx.window = ctx;
  ctx.self = ctx;
  ctx.globalThis = ctx;
  vm.createContext(ctx);
  for (const file of [d3Bundle, path.join(assets, "util.js"), path.join(assets, "attribution_graph", "util-cg.js")]) {
    vm.runInContext(fs.readFileSync(file, "utf8"), ctx, { filename: file });
  }
  const data = JSON.parse(fs.readFileSync(graphPath, "utf8"));
  const visState = { pinnedIds: [], clickedId: null, hiddenIds: [] };
  const out = await ctx.utilCg.formatData(data, visState);
  const logit = out.nodes.filter((d) => d.feature_type === "logit");
  const summary = {
    nodes: out.nodes.length,
    links: out.links.length,
    features: out.features.length,
    streams: out.byStream.length,
    logitPct: logit.map((d) => d.logitPct),
    logitClerp: logit.map((d) => d.clerp),
    connected: out.links.every((l) => l.sourceNode && l.targetNode),
    errorNodes: out.nodes.filter((d) => d.isError).map((d) => d.node_id),
    targetInputs: logit.map((d) => d.sourceLinks.length),
    featureLinks: out.links.filter((l) => l.targetNode.feature_type !== "logit").length,
    promptTokens: out.metadata.prompt_tokens,
  };
  process.stdout.write(JSON.stringify(summary));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack || err));
  process.exit(1);
});
