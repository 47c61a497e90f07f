/**
 * Scripted model servers on loopback for the agent tests: they stand in for the model providers'
 * own servers (which cannot be reached here) and speak their real streaming wire formats, so the
 * real agents (`claude`, `codex`, `opencode`) run unchanged against them.
 *
 * - `anthropic`: the Anthropic Messages API (`POST /v1/messages`, `stream: true` server-sent
 *   events `message_start` ... `message_stop`), used by `claude` and by opencode's `anthropic`
 *   provider.
 * - `openai`: the OpenAI Responses API (`POST /v1/responses`, `stream: true` server-sent events
 *   `response.created` ... `response.completed`), used by `codex`.
 *
 * The script is read from the newest user text of each request:
 * - `WRITE <path> <content>`: first a tool call running `printf <content> > <path>` with the
 *   agent's shell tool, then (once the tool's result comes back) the text `wrote <path>`;
 * - `HANG`: the stream starts and then sends nothing more until the client goes away;
 * - `SLOW`: the text `slow done` after 3 seconds (a turn long enough to steer);
 * - anything else: the text `echo: <text>`.
 * Requests without tools (titles, summaries) get a short text. Every request body is kept, so a
 * test can check what the agent sent (a resumed conversation sends the earlier turns again).
 */
import { Effect } from "effect"
import * as NodeHttp from "node:http"
import type * as NodeNet from "node:net"

export interface ModelServer {
  /** On the host's loopback. */
  readonly url: string
  /**
   * The same server as a sandbox machine with internet access reaches it: at 10.0.2.2, once svc
   * lets its port through (`machineNetwork.hostPorts`, SVC_MACHINE_HOST_PORTS; docs/drivers.md
   * "Network"): the host's loopback is otherwise closed to machines.
   */
  readonly machineUrl: string
  readonly port: number
  /** Every request body received, oldest first. */
  readonly requests: Array<{ readonly path: string; readonly body: any }>
  /** Requests whose stream hangs now (closed when the server closes). */
  readonly hanging: () => number
}

const sse = (response: NodeHttp.ServerResponse, event: string, data: unknown) =>
  response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.map((part: any) => typeof part === "string" ? part : typeof part?.text === "string" ? part.text : "")
      .join("\n")
    : ""

/** The script directive of the newest user text: the last line that starts with a directive word. */
export const directiveOf = (texts: ReadonlyArray<string>) => {
  for (const text of [...texts].reverse()) {
    const lines = text.split("\n").map((line) => line.trim().replace(/^["'`]+|["'`]+$/g, "")).reverse()
    for (const line of lines) {
      const match = /^(WRITE|HANG|SLOW)\b\s*(.*)$/.exec(line)
      if (match) return { word: match[1]!, rest: match[2]! }
    }
    if (text.trim() !== "") return { word: "ECHO", rest: text.trim().slice(0, 200) }
  }
  return { word: "ECHO", rest: "" }
}

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`

export const writeCommand = (rest: string) => {
  const [path, ...content] = rest.split(" ")
  return { path: path!, command: `printf %s ${shellQuote(content.join(" "))} > ${shellQuote(path!)}` }
}

const listen = (handler: (request: any, body: any, response: NodeHttp.ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ server: NodeHttp.Server; sockets: Set<NodeNet.Socket>; requests: ModelServer["requests"] }>(
      (resume) => {
        const requests: ModelServer["requests"] = []
        const sockets = new Set<NodeNet.Socket>()
        const server = NodeHttp.createServer((request, response) => {
          const chunks: Array<Buffer> = []
          request.on("data", (chunk: Buffer) => chunks.push(chunk))
          request.on("end", () => {
            let body: any = undefined
            try {
              body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
            } catch {
              body = undefined
            }
            requests.push({ path: request.url ?? "", body })
            handler(request, body, response)
          })
        })
        server.on("connection", (socket) => {
          sockets.add(socket)
          socket.on("close", () => sockets.delete(socket))
        })
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, sockets, requests })))
      }
    ),
    ({ server, sockets }) =>
      Effect.async<void>((resume) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resume(Effect.void))
      })
  )

// ---------------------------------------------------------------------------------------------
// Anthropic Messages

interface AnthropicBlock {
  readonly type: "text" | "tool_use"
  readonly text?: string
  readonly id?: string
  readonly name?: string
  readonly input?: unknown
}

/** Usage every scripted Anthropic answer reports. */
export const anthropicUsage = { input_tokens: 120, output_tokens: 30, cache_read_input_tokens: 8 }

const anthropicStream = (response: NodeHttp.ServerResponse, model: string, blocks: ReadonlyArray<AnthropicBlock>) => {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  const id = `msg_${Math.random().toString(36).slice(2)}`
  sse(response, "message_start", {
    type: "message_start",
    message: {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: anthropicUsage.input_tokens,
        cache_read_input_tokens: anthropicUsage.cache_read_input_tokens,
        cache_creation_input_tokens: 0,
        output_tokens: 1
      }
    }
  })
  blocks.forEach((block, index) => {
    if (block.type === "text") {
      sse(response, "content_block_start", {
        type: "content_block_start",
        index,
        content_block: { type: "text", text: "" }
      })
      sse(response, "content_block_delta", {
        type: "content_block_delta",
        index,
        delta: { type: "text_delta", text: block.text }
      })
    } else {
      sse(response, "content_block_start", {
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: block.id, name: block.name, input: {} }
      })
      sse(response, "content_block_delta", {
        type: "content_block_delta",
        index,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) }
      })
    }
    sse(response, "content_block_stop", { type: "content_block_stop", index })
  })
  const usesTool = blocks.some((block) => block.type === "tool_use")
  sse(response, "message_delta", {
    type: "message_delta",
    delta: { stop_reason: usesTool ? "tool_use" : "end_turn", stop_sequence: null },
    usage: { output_tokens: anthropicUsage.output_tokens }
  })
  sse(response, "message_stop", { type: "message_stop" })
  response.end()
}

/** The name of the request's shell tool (`Bash` for claude, `bash` for opencode). */
const shellToolOf = (tools: ReadonlyArray<{ name?: string }> | undefined) =>
  tools?.find((tool) => tool.name === "Bash" || tool.name === "bash")?.name

export const anthropicServer = Effect.gen(function*() {
  let hanging = 0
  const { requests, server } = yield* listen((request, body, response) => {
    if (request.method !== "POST" || !String(request.url).startsWith("/v1/messages")) {
      response.writeHead(404, { "content-type": "application/json" })
      return response.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: "not here" } }))
    }
    if (String(request.url).startsWith("/v1/messages/count_tokens")) {
      response.writeHead(200, { "content-type": "application/json" })
      return response.end(JSON.stringify({ input_tokens: 100 }))
    }
    const model = String(body?.model ?? "claude-test")
    const messages: Array<{ role: string; content: any }> = body?.messages ?? []
    const tool = shellToolOf(body?.tools)
    const last = messages[messages.length - 1]
    const lastParts: Array<any> = Array.isArray(last?.content) ? last.content : []
    const toolResult = lastParts.some((part) => part?.type === "tool_result")
    if (tool === undefined || body?.stream !== true) {
      // A side request (a title, a summary): short text, streamed or not as asked.
      if (body?.stream === true) return anthropicStream(response, model, [{ type: "text", text: "Agent test" }])
      response.writeHead(200, { "content-type": "application/json" })
      return response.end(JSON.stringify({
        id: "msg_side",
        type: "message",
        role: "assistant",
        model,
        content: [{ type: "text", text: "Agent test" }],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 2 }
      }))
    }
    const userTexts = messages.filter((m) => m.role === "user").map((m) =>
      Array.isArray(m.content)
        ? m.content.filter((p: any) => p?.type === "text").map((p: any) => p.text).join("\n")
        : textOf(m.content)
    ).filter((text) => text.trim() !== "")
    const directive = directiveOf(userTexts)
    if (toolResult) {
      return anthropicStream(response, model, [{ type: "text", text: `wrote ${writeCommand(directive.rest).path}` }])
    }
    switch (directive.word) {
      case "WRITE":
        return anthropicStream(response, model, [{
          type: "tool_use",
          id: `toolu_${Math.random().toString(36).slice(2)}`,
          name: tool,
          input: { command: writeCommand(directive.rest).command, description: "write the file" }
        }])
      case "HANG":
        hanging++
        response.writeHead(200, { "content-type": "text/event-stream" })
        sse(response, "message_start", {
          type: "message_start",
          message: { id: "msg_hang", type: "message", role: "assistant", model, content: [], usage: anthropicUsage }
        })
        response.on("close", () => hanging--)
        return
      case "SLOW":
        return void setTimeout(() => anthropicStream(response, model, [{ type: "text", text: "slow done" }]), 3_000)
      default:
        return anthropicStream(response, model, [{ type: "text", text: `echo: ${directive.rest}` }])
    }
  })
  const address = server.address() as NodeNet.AddressInfo
  return {
    url: `http://127.0.0.1:${address.port}`,
    machineUrl: `http://10.0.2.2:${address.port}`,
    port: address.port,
    requests,
    hanging: () => hanging
  } satisfies ModelServer
})

// ---------------------------------------------------------------------------------------------
// OpenAI Responses

/** Usage every scripted Responses answer reports. */
export const openaiUsage = { input_tokens: 150, cached_tokens: 20, output_tokens: 25 }

const responsesStream = (
  response: NodeHttp.ServerResponse,
  model: string,
  output: ReadonlyArray<Record<string, unknown>>
) => {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  const id = `resp_${Math.random().toString(36).slice(2)}`
  let sequence = 0
  const send = (type: string, data: Record<string, unknown>) =>
    sse(response, type, { type, sequence_number: sequence++, ...data })
  const base = { id, object: "response", created_at: Math.floor(Date.now() / 1000), model, status: "in_progress" }
  send("response.created", { response: { ...base, output: [] } })
  send("response.in_progress", { response: { ...base, output: [] } })
  output.forEach((item, index) => {
    if (item.type === "message") {
      const text = String((item.content as Array<{ text: string }>)[0]!.text)
      send("response.output_item.added", { output_index: index, item: { ...item, status: "in_progress", content: [] } })
      send("response.content_part.added", {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [] }
      })
      send("response.output_text.delta", { item_id: item.id, output_index: index, content_index: 0, delta: text })
      send("response.output_text.done", { item_id: item.id, output_index: index, content_index: 0, text })
      send("response.content_part.done", {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part: { type: "output_text", text, annotations: [] }
      })
    } else {
      send("response.output_item.added", { output_index: index, item: { ...item, status: "in_progress" } })
    }
    send("response.output_item.done", { output_index: index, item: { ...item, status: "completed" } })
  })
  send("response.completed", {
    response: {
      ...base,
      status: "completed",
      output,
      usage: {
        input_tokens: openaiUsage.input_tokens,
        input_tokens_details: { cached_tokens: openaiUsage.cached_tokens },
        output_tokens: openaiUsage.output_tokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: openaiUsage.input_tokens + openaiUsage.output_tokens
      }
    }
  })
  response.end()
}

const messageItem = (text: string) => ({
  id: `msg_${Math.random().toString(36).slice(2)}`,
  type: "message",
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text, annotations: [] }]
})

/** A call of the request's shell tool, in the argument shape that tool declares. */
const shellCall = (tools: ReadonlyArray<any>, command: string) => {
  const names = tools.map((tool) => String(tool?.name ?? ""))
  const call = (name: string, args: unknown) => ({
    id: `fc_${Math.random().toString(36).slice(2)}`,
    type: "function_call",
    status: "completed",
    call_id: `call_${Math.random().toString(36).slice(2)}`,
    name,
    arguments: JSON.stringify(args)
  })
  if (names.includes("exec_command")) return call("exec_command", { cmd: command })
  if (names.includes("shell_command")) return call("shell_command", { command })
  if (names.includes("shell")) return call("shell", { command: ["bash", "-lc", command] })
  if (names.includes("bash")) return call("bash", { command, description: "write the file" })
  return undefined
}

export const openaiServer = Effect.gen(function*() {
  let hanging = 0
  const { requests, server } = yield* listen((request, body, response) => {
    const url = String(request.url)
    if (request.method === "GET" && url.includes("/models")) {
      response.writeHead(200, { "content-type": "application/json" })
      return response.end(JSON.stringify({ object: "list", data: [], models: [] }))
    }
    if (request.method !== "POST" || !url.includes("/responses")) {
      response.writeHead(404, { "content-type": "application/json" })
      return response.end(JSON.stringify({ error: { message: "not here", type: "invalid_request_error" } }))
    }
    const model = String(body?.model ?? "gpt-test")
    const input: Array<any> = Array.isArray(body?.input) ? body.input : []
    const last = input[input.length - 1]
    const userTexts = input.filter((item) => item?.role === "user").map((item) => textOf(item.content))
      .filter((text) => text.trim() !== "")
    const directive = directiveOf(userTexts)
    if (last?.type === "function_call_output" || last?.type === "custom_tool_call_output") {
      return responsesStream(response, model, [messageItem(`wrote ${writeCommand(directive.rest).path}`)])
    }
    switch (directive.word) {
      case "WRITE": {
        const call = shellCall(body?.tools ?? [], writeCommand(directive.rest).command)
        if (call !== undefined) return responsesStream(response, model, [call])
        return responsesStream(response, model, [messageItem("no shell tool offered")])
      }
      case "HANG":
        hanging++
        response.writeHead(200, { "content-type": "text/event-stream" })
        sse(response, "response.created", {
          type: "response.created",
          sequence_number: 0,
          response: { id: "resp_hang", object: "response", model, status: "in_progress", output: [] }
        })
        response.on("close", () => hanging--)
        return
      case "SLOW":
        return void setTimeout(() => responsesStream(response, model, [messageItem("slow done")]), 3_000)
      default:
        return responsesStream(response, model, [messageItem(`echo: ${directive.rest}`)])
    }
  })
  const address = server.address() as NodeNet.AddressInfo
  return {
    url: `http://127.0.0.1:${address.port}`,
    machineUrl: `http://10.0.2.2:${address.port}`,
    port: address.port,
    requests,
    hanging: () => hanging
  } satisfies ModelServer
})
