import fs from "node:fs";
import path from "node:path";
import { AGENTS, runAgent, world } from "./harness.mjs";
import { fakeAnthropic, claudeEnv } from "./fake-anthropic.mjs";
import { fakeResponses } from "./fake-openai-responses.mjs";
import { fakeGemini } from "./fake-gemini.mjs";
import { fakeOpenAIChat } from "./fake-openai-chat.mjs";
const out = "/tmp/probe-out";
fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out);
const hook = (agent, ev) => ({ type: "command", command: `sh -c 'env > ${out}/${agent}-${ev}.env; cat > ${out}/${agent}-${ev}.json'`, ...(agent === "gemini" ? { name: "p" } : {}) });
const settings = (agent, evs) => JSON.stringify({ ...(agent === "qwen" ? { $version: 4 } : {}), hooks: Object.fromEntries(evs.map((e) => [e, [{ hooks: [hook(agent, e)] }]])) });
// claude
{
  const s = await fakeAnthropic();
  const w = world("p");
  w.put("ws/.claude/settings.json", settings("claude", ["SessionStart", "UserPromptSubmit", "Stop"]));
  const r = await runAgent(w, AGENTS.claude, ["-p", "hi"], { env: claudeEnv(s.url) });
  console.log("claude", r.code);
  await s.close();
}
// codex
{
  const s = await fakeResponses();
  const w = world("p");
  w.put("home/.codex/config.toml", ['model = "fake-model"', 'model_provider = "fake"', "", "[model_providers.fake]", 'name = "fake"', `base_url = "${s.url}"`, 'wire_api = "responses"', 'env_key = "FAKE_API_KEY"', ""].join("\n"));
  w.put("ws/.codex/hooks.json", settings("codex", ["SessionStart", "UserPromptSubmit", "Stop"]));
  const r = await runAgent(w, AGENTS.codex, ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--trust", "--dangerously-bypass-hook-trust", "hi"], { env: { CODEX_HOME: path.join(w.home, ".codex"), FAKE_API_KEY: "x" } });
  console.log("codex", r.code, r.stderr.slice(-300));
  await s.close();
}
// gemini
{
  const s = await fakeGemini();
  const w = world("p");
  w.put("home/.gemini/settings.json", JSON.stringify({ general: { enableAutoUpdate: false }, privacy: { usageStatisticsEnabled: false }, telemetry: { enabled: false }, ide: { enabled: false }, security: { auth: { selectedType: "gemini-api-key" } } }));
  w.put("ws/.gemini/settings.json", settings("gemini", ["SessionStart", "BeforeAgent", "AfterAgent"]));
  const r = await runAgent(w, AGENTS.gemini, ["-p", "hi", "-m", "gemini-2.5-flash"], { env: { GEMINI_API_KEY: "x", GOOGLE_GEMINI_BASE_URL: s.url, GEMINI_CLI_TRUST_WORKSPACE: "true" } });
  console.log("gemini", r.code);
  await s.close();
}
// qwen
{
  const s = await fakeOpenAIChat();
  const w = world("p");
  w.put("home/.qwen/settings.json", JSON.stringify({ $version: 4, privacy: { usageStatisticsEnabled: false }, general: { enableAutoUpdate: false }, telemetry: { enabled: false } }));
  w.put("ws/.qwen/settings.json", settings("qwen", ["SessionStart", "UserPromptSubmit", "Stop"]));
  const r = await runAgent(w, AGENTS.qwen, ["-p", "hi"], { env: { ...s.env, QWEN_CODE_SUPPRESS_YOLO_WARNING: "1" } });
  console.log("qwen", r.code);
  await s.close();
}
