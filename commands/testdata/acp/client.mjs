// An ACP client built on the official TypeScript SDK (@agentclientprotocol/sdk)
// that drives `decode acp`: initialize, session/new, a prompt whose edit
// asks (answered "always"), a prompt whose command asks (the client cancels
// the turn), then, in a second decode process, session/list and session/load
// of the same session. It prints what it saw as one JSON object; the Go test
// (acp_npm_test.go) asserts on it.
//
//   node client.mjs DECODE_BINARY WORKDIR SCRIPT_FILE
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [decodeBin, cwd, script] = process.argv.slice(2);
const seen = { permissions: [], updates: {} };
let phase = "";
let onPermission = async () => ({ outcome: { outcome: "selected", optionId: "allow_always" } });

function start() {
  const child = spawn(decodeBin, ["acp", "-m", "script:" + script], { cwd, stdio: ["pipe", "pipe", "inherit"] });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const app = acp.client({ name: "decode-e2e" })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      seen.permissions.push({ phase, title: params.toolCall.title, kind: params.toolCall.kind,
        options: params.options.map((o) => o.kind) });
      return onPermission(params);
    })
    .onNotification(acp.methods.client.session.update, async ({ params }) => {
      (seen.updates[phase] ??= []).push(params.update);
    });
  return { child, app, stream };
}

function exited(child) {
  return new Promise((resolve) => child.on("exit", (code) => resolve(code)));
}

const first = start();
await first.app.connectWith(first.stream, async (agent) => {
  phase = "init";
  seen.init = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {},
  });
  phase = "new";
  seen.session = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  const sessionId = seen.session.sessionId;

  phase = "prompt1";
  seen.prompt1 = await agent.request(acp.methods.agent.session.prompt, {
    sessionId, prompt: [{ type: "text", text: "fix the typo in greeting.txt" }],
  });

  phase = "prompt2";
  onPermission = async () => {
    // The person stops the turn while decode asks: cancel, and answer the
    // open request "cancelled" as the protocol requires.
    await agent.notify(acp.methods.agent.session.cancel, { sessionId });
    return { outcome: { outcome: "cancelled" } };
  };
  seen.prompt2 = await agent.request(acp.methods.agent.session.prompt, {
    sessionId, prompt: [{ type: "text", text: "now write out.txt" }],
  });
});
first.child.stdin.end();
seen.exit1 = await exited(first.child);

const second = start();
await second.app.connectWith(second.stream, async (agent) => {
  phase = "init2";
  await agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  phase = "list";
  seen.list = await agent.request(acp.methods.agent.session.list, { cwd });
  phase = "load";
  seen.load = await agent.request(acp.methods.agent.session.load, {
    sessionId: seen.session.sessionId, cwd, mcpServers: [],
  });
});
second.child.stdin.end();
seen.exit2 = await exited(second.child);
process.stdout.write(JSON.stringify(seen) + "\n");
