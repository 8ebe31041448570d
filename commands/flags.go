package commands

import (
	"strings"
	"sync"
	"time"

	"decode/agent"
	"decode/session"
	"decode/tools"

	"github.com/urfave/cli/v2"
)

// AgentOptions are the flags and inputs shared by the commands that run
// the agent loop (ask, run).
type AgentOptions struct {
	F         *Factory
	Command   string
	Prompt    string
	Model     string
	Mode      string
	Allow     []string
	Deny      []string
	MaxTurns  int
	Quiet     bool
	Dir       string
	NoSession bool
	MaxStdin  int64
	// NoStdin never reads stdin, even when it is a pipe or a file.
	NoStdin bool
	// Files are the -f attachments as given; attached is what was read.
	Files    []string
	attached *attachments

	// Session, when set, continues that session (resume) instead of
	// starting a new one.
	Session string
	// Opened is Session already loaded by the command, so that a long
	// session is not read twice; with Session empty, a new session the
	// command created (decode acp names it before its first prompt).
	Opened *session.Session
	// JSON prints JSONL events on stdout instead of text.
	JSON bool
	// SchemaFile is a JSON Schema the final answer must satisfy.
	SchemaFile string
	MaxSteps   int
	MaxCost    float64
	Timeout    time.Duration
	// IdleTimeout is --idle-timeout as given ("" when not).
	IdleTimeout string
	// OnAsk is what a headless run does when the gate says ask: pause or deny.
	OnAsk string
	// AddDirs widen the workspace beyond the repository (or cwd).
	AddDirs []string
	// SystemFile replaces the system prompt; AppendSystemFile extends it.
	SystemFile       string
	AppendSystemFile string
	// SystemPrompt and AppendSystemPrompt are the same given inline.
	SystemPrompt       string
	AppendSystemPrompt string
	// Plan names a plan session to carry out; PlanFile a plan in a file.
	Plan     string
	PlanFile string
	// Remember appends one dated sentence of what was learned to ./MEMORY.md.
	Remember bool
	// MCPStrict makes an MCP server that fails to start an error.
	MCPStrict bool
	// recordedMCP is what the start entry of a resumed or replayed session
	// recorded of its MCP servers.
	recordedMCP []session.MCPServerData
	// usedTools are the MCP tools a resumed session called, and the
	// results of its mcp_search calls.
	usedTools []string
	// Sandbox is --sandbox: auto, strict or off; AllowNet is --allow-net:
	// hosts commands may reach through decode's proxy, "*" the whole
	// network.
	Sandbox  string
	AllowNet []string
	// sandbox is what the run's sandbox set-up decided.
	sandbox sandboxState

	// spec is the run spec in effect, once worked out (a resume's: the
	// recorded one with the flags' changes, respec).
	spec   *session.RunSpec
	respec []session.SpecChange
	// sink and approve, when set, replace the terminal's renderer and
	// approval prompt (decode acp reports to and asks its client).
	sink    sink
	approve agent.Approver
	// buffers, when set, is the editor the file tools read and write
	// through (decode acp, when its client offers fs/*).
	buffers tools.Buffers
	// schemaRaw is a resumed session's recorded schema, used when no
	// --schema is given.
	schemaRaw []byte

	// OutputLastMessage is --output-last-message as given: the file the
	// final answer is written to when the run ends done; lastMessage is
	// that path made absolute, once checked.
	OutputLastMessage string
	lastMessage       string
	// Verbose is -v: lines on stderr saying what decode is doing; vlock
	// is the run's sink once it exists, held while one is written.
	Verbose bool
	vlock   sync.Locker
	// modelFrom says what chose the model, for -v.
	modelFrom string
}

// lastMessageFlag is --output-last-message, for the commands that end
// with an answer (ask, run, plan, resume, replay).
func lastMessageFlag() cli.Flag {
	return &cli.StringFlag{Name: "output-last-message", Aliases: []string{"o"},
		Usage: "also write the final answer (the --json end event's result) to `FILE`, atomically, when the run ends done; a paused or failed run leaves FILE untouched"}
}

func agentFlags(withMode bool) []cli.Flag {
	fl := []cli.Flag{
		&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "model as `PROVIDER:MODEL` (gemini, openai, anthropic, openrouter, deepseek, ollama, script:FILE)", EnvVars: nil},
		&cli.IntFlag{Name: "max-turns", Usage: "stop after `N` model requests (exit 5); 0 means no limit"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but the answer: no tool lines, no session id"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "say on stderr what decode is doing: config files read, model, endpoint and key source (never the key), memory files, sandbox, each gate decision; not with -q"},
		&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "run in `DIR` instead of the current directory"},
		&cli.BoolFlag{Name: "no-session", Usage: "do not record the session in git"},
		&cli.BoolFlag{Name: "no-stdin", Usage: "never read stdin, even when it is a pipe or a file (as in a while-read loop)"},
		&cli.Int64Flag{Name: "max-stdin", Usage: "refuse piped input larger than `BYTES`", Value: defaultMaxStdin},
		&cli.BoolFlag{Name: "json", Usage: "print JSONL events on stdout instead of text (schema in the README)"},
		&cli.StringFlag{Name: "schema", Usage: "the final answer must be JSON valid against the JSON Schema in `FILE`; only that JSON is printed"},
		&cli.IntFlag{Name: "max-steps", Usage: "stop after `N` tool-call steps (exit 5)"},
		&cli.Float64Flag{Name: "max-cost", Usage: "stop when the session has cost `USD` (exit 5)"},
		&cli.DurationFlag{Name: "timeout", Usage: "stop after `DURATION` of wall time, e.g. 20m (exit 5)"},
		&cli.StringFlag{Name: "idle-timeout", Usage: "fail a model request that receives nothing for `DURATION` (default 2m; 0 never), and retry it"},
		&cli.StringFlag{Name: "system-file", Usage: "replace the system prompt with the text in `FILE`"},
		&cli.StringFlag{Name: "append-system-file", Usage: "add the text in `FILE` to the system prompt"},
		&cli.StringFlag{Name: "system-prompt", Usage: "replace the system prompt with `TEXT`"},
		&cli.StringFlag{Name: "append-system-prompt", Usage: "add `TEXT` to the system prompt"},
		&cli.BoolFlag{Name: "mcp-strict", Usage: "fail (exit 1) when a configured MCP server does not start, instead of warning and going on without it"},
	}
	// The gate's rules and the workspace apply to the read-only commands
	// (ask, plan) too: --allow 'web_fetch(domain:go.dev)', --add-dir ../lib.
	fl = append(fl,
		&cli.StringSliceFlag{Name: "allow", Usage: "allow tool calls matching `RULE`, e.g. 'bash(go test *)', 'edit(src/**)', 'web_fetch(domain:go.dev)'"},
		&cli.StringSliceFlag{Name: "deny", Usage: "deny tool calls matching `RULE`; deny wins over allow"},
		&cli.StringSliceFlag{Name: "add-dir", Usage: "let file tools reach `DIR` too, beyond the repository"},
	)
	if withMode {
		fl = append(fl,
			&cli.StringFlag{Name: "mode", Usage: "permission mode: `default` (ask before changes), plan (read-only), edit (file edits allowed), bypass (everything allowed)"},
			&cli.StringFlag{Name: "on-ask", Usage: "with no terminal, when a call needs approval: `pause` (exit 3, decode approve|deny then resume) or deny", Value: "pause"},
			&cli.StringFlag{Name: "sandbox", Usage: "contain bash commands with the OS: `auto` (every layer the machine gives), strict (refuse without all), off (unconfined, recorded)"},
			&cli.StringSliceFlag{Name: "allow-net", Usage: "let sandboxed bash commands reach `HOST` (host, host:port or *.example.com; repeatable) through decode's proxy; '*' opens the whole network"},
		)
	}
	return fl
}

// agentOptions reads the shared flags and the prompt from the arguments.
// onAsk is --on-ask when given, else "" (a resume keeps the session's).
func onAsk(c *cli.Context) string {
	if !c.IsSet("on-ask") {
		return ""
	}
	return c.String("on-ask")
}

func agentOptions(f *Factory, command string, c *cli.Context) *AgentOptions {
	return &AgentOptions{
		F:         f,
		Command:   command,
		Prompt:    strings.Join(c.Args().Slice(), " "),
		Model:     c.String("model"),
		Mode:      c.String("mode"),
		Allow:     c.StringSlice("allow"),
		Deny:      c.StringSlice("deny"),
		MaxTurns:  c.Int("max-turns"),
		Quiet:     c.Bool("quiet"),
		Dir:       c.String("dir"),
		NoSession: c.Bool("no-session"),
		MaxStdin:  c.Int64("max-stdin"),
		NoStdin:   c.Bool("no-stdin"),
		Files:     attachedFiles(c),

		JSON:               c.Bool("json"),
		SchemaFile:         c.String("schema"),
		MaxSteps:           c.Int("max-steps"),
		MaxCost:            c.Float64("max-cost"),
		Timeout:            c.Duration("timeout"),
		IdleTimeout:        c.String("idle-timeout"),
		OnAsk:              onAsk(c),
		AddDirs:            c.StringSlice("add-dir"),
		Sandbox:            c.String("sandbox"),
		AllowNet:           c.StringSlice("allow-net"),
		SystemFile:         c.String("system-file"),
		AppendSystemFile:   c.String("append-system-file"),
		SystemPrompt:       c.String("system-prompt"),
		AppendSystemPrompt: c.String("append-system-prompt"),
		MCPStrict:          c.Bool("mcp-strict"),
		OutputLastMessage:  c.String("output-last-message"),
		Verbose:            c.Bool("verbose"),
	}
}
