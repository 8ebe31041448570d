package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"decode/agent/llm"
	"decode/tools"
)

// SearchName is the name of the tool that finds deferred MCP tools.
const SearchName = "mcp_search"

// DefaultBudget is how many bytes of MCP tool definitions go into every
// request before they are offered through mcp_search instead.
const DefaultBudget = 8 * 1024

// maxFound caps the tools one search returns.
const maxFound = 8

// Search is the mcp_search tool: it finds MCP tools by words of their
// names and descriptions, returns their definitions, and makes them
// callable (reveal adds them to the tools of later requests).
type Search struct {
	tools  []tools.Tool
	reveal func(names ...string)
	spec   llm.ToolSpec
}

// NewSearch returns the search over ts; reveal is called with the names
// of the tools a search found.
func NewSearch(ts []tools.Tool, reveal func(names ...string)) *Search {
	servers := map[string]int{}
	for _, t := range ts {
		if mt, ok := t.(*Tool); ok {
			servers[mt.Server()]++
		}
	}
	names := make([]string, 0, len(servers))
	for s, n := range servers {
		names = append(names, fmt.Sprintf("%s (%d tools)", s, n))
	}
	sort.Strings(names)
	desc := fmt.Sprintf("Find tools of the connected MCP servers: %s. Their definitions are not listed up front, to save context. "+
		"Search with words of what you need (e.g. \"list issues\"); the matching tools' names, descriptions and input schemas come back, and from then on you can call them by name.",
		strings.Join(names, ", "))
	return &Search{tools: ts, reveal: reveal, spec: llm.ToolSpec{
		Name:        SearchName,
		Description: desc,
		Schema:      json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"words to look for in tool names and descriptions; a server name lists its tools"}},"required":["query"]}`),
	}}
}

// Spec describes the tool.
func (s *Search) Spec() llm.ToolSpec { return s.spec }

// ReadOnly: a search changes nothing.
func (s *Search) ReadOnly() bool { return true }

// Run finds the tools that match the query best.
func (s *Search) Run(_ context.Context, args json.RawMessage) (tools.Result, error) {
	var a struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(args, &a); err != nil || strings.TrimSpace(a.Query) == "" {
		return tools.Result{IsError: true, Content: `invalid arguments: expected {"query": string}`, Note: "mcp_search: bad arguments"}, nil
	}
	words := strings.Fields(strings.ToLower(a.Query))
	type hit struct {
		t     tools.Tool
		score int
	}
	var hits []hit
	for i, t := range s.tools {
		spec := t.Spec()
		name := strings.ToLower(spec.Name)
		text := name + " " + strings.ToLower(spec.Description)
		score := 0
		for _, w := range words {
			switch {
			case strings.Contains(name, w):
				score += 3
			case strings.Contains(text, w):
				score++
			}
		}
		if score > 0 {
			hits = append(hits, hit{t, score*1000 - i})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	if len(hits) == 0 {
		return tools.Result{Content: fmt.Sprintf("no MCP tool matches %q; try other words, or a server name", a.Query), Note: "mcp_search: no match"}, nil
	}
	if len(hits) > maxFound {
		hits = hits[:maxFound]
	}
	var found []llm.ToolSpec
	var names []string
	for _, h := range hits {
		found = append(found, h.t.Spec())
		names = append(names, h.t.Spec().Name)
	}
	s.reveal(names...)
	var b strings.Builder
	for _, f := range found {
		js, _ := json.Marshal(f)
		b.Write(js)
		b.WriteByte('\n')
	}
	return tools.Result{
		Content: fmt.Sprintf("%d tool(s) found; you can call them now:\n%s", len(found), b.String()),
		Note:    fmt.Sprintf("mcp_search %q: %s", a.Query, strings.Join(names, ", ")),
	}, nil
}
