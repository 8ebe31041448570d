package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"decode/agent/llm"
)

// params builds the Messages API request. The system prompt, the last
// tool spec and the last message carry cache_control, so the stable prefix
// (tools, then system, then the conversation so far) is cached across the
// steps of a session.
func (m *Model) params(req llm.Request) (sdk.MessageNewParams, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = m.maxTokens
	}
	p := sdk.MessageNewParams{
		Model:     sdk.Model(m.model),
		MaxTokens: int64(maxTokens),
		Tools:     tools(req.Tools),
	}
	if len(req.ResponseSchema) > 0 {
		withRespond(&p, req.Tools, req.ResponseSchema)
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System, CacheControl: sdk.NewCacheControlEphemeralParam()}}
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return p, err
	}
	cacheConversation(msgs)
	p.Messages = msgs
	return p, nil
}

// cacheConversation makes the end of the conversation a cache breakpoint
// (the third, after tools and system), so that each step of a session
// reads everything before its own new messages from the cache instead of
// paying for it again.
func cacheConversation(msgs []sdk.MessageParam) {
	if len(msgs) == 0 {
		return
	}
	user := msgs[len(msgs)-1].OfUser
	if user == nil || len(user.Content) == 0 {
		return
	}
	switch b := user.Content[len(user.Content)-1]; {
	case b.OfText != nil:
		b.OfText.CacheControl = sdk.NewCacheControlEphemeralParam()
	case b.OfToolResult != nil:
		b.OfToolResult.CacheControl = sdk.NewCacheControlEphemeralParam()
	case b.OfImage != nil:
		b.OfImage.CacheControl = sdk.NewCacheControlEphemeralParam()
	}
}

// tools converts tool specs, passing each JSON schema through unchanged.
func tools(specs []llm.ToolSpec) []sdk.ToolUnionParam {
	if len(specs) == 0 {
		return nil
	}
	out := make([]sdk.ToolUnionParam, len(specs))
	for i, s := range specs {
		t := sdk.ToolParam{Name: s.Name, InputSchema: inputSchema(s.Schema)}
		if s.Description != "" {
			t.Description = sdk.String(s.Description)
		}
		if i == len(specs)-1 {
			t.CacheControl = sdk.NewCacheControlEphemeralParam()
		}
		out[i] = sdk.ToolUnionParam{OfTool: &t}
	}
	return out
}

// inputSchema sends the raw schema as input_schema; the SDK's typed schema
// would drop keywords it does not model.
func inputSchema(schema json.RawMessage) sdk.ToolInputSchemaParam {
	if len(schema) == 0 || !json.Valid(schema) {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return param.Override[sdk.ToolInputSchemaParam](schema)
}

// messages converts the conversation. Tool results become one user message
// of tool_result blocks answering the previous assistant message.
func messages(msgs []llm.Message) ([]sdk.MessageParam, error) {
	out := make([]sdk.MessageParam, 0, len(msgs))
	for i, msg := range msgs {
		switch msg.Role {
		case llm.RoleAssistant:
			if blocks := assistantBlocks(msg); len(blocks) > 0 {
				out = append(out, sdk.NewAssistantMessage(blocks...))
			}
		case llm.RoleUser, llm.RoleTool:
			if blocks := userBlocks(msg); len(blocks) > 0 {
				out = append(out, sdk.NewUserMessage(blocks...))
			}
		default:
			return nil, &llm.Error{Kind: llm.ErrBadRequest, Provider: provider,
				Msg: fmt.Sprintf("message %d: unknown role %q", i, msg.Role)}
		}
	}
	return out, nil
}

// imageTypes are the image types a tool result may carry.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// userBlocks holds the tool results (which must come first), the text and
// the images the user attached.
// Empty text blocks are rejected by the API, so they are left out.
func userBlocks(msg llm.Message) []sdk.ContentBlockParamUnion {
	var blocks []sdk.ContentBlockParamUnion
	for _, r := range msg.Results {
		res := sdk.ToolResultBlockParam{ToolUseID: r.CallID}
		if r.Content != "" {
			res.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: r.Content}}}
		}
		for _, img := range r.Images {
			if imageTypes[img.MIME] {
				res.Content = append(res.Content, sdk.ToolResultBlockParamContentUnion{OfImage: imageBlock(img)})
			}
		}
		if r.IsError {
			res.IsError = sdk.Bool(true)
		}
		blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: &res})
	}
	if msg.Text != "" {
		blocks = append(blocks, sdk.NewTextBlock(msg.Text))
	}
	for _, img := range msg.Images {
		blocks = append(blocks, sdk.ContentBlockParamUnion{OfImage: imageBlock(img)})
	}
	return blocks
}

// imageBlock is an image as a base64 image block.
func imageBlock(img llm.Image) *sdk.ImageBlockParam {
	return &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfBase64: &sdk.Base64ImageSourceParam{
		Data: base64.StdEncoding.EncodeToString(img.Data), MediaType: sdk.Base64ImageSourceMediaType(img.MIME)}}}
}

// assistantBlocks replays this adapter's own blocks verbatim (thinking
// signatures must come back unchanged), and otherwise builds text and
// tool_use blocks from the neutral fields.
func assistantBlocks(msg llm.Message) []sdk.ContentBlockParamUnion {
	if msg.Native != nil && msg.Native.Provider == provider {
		var raws []json.RawMessage
		if err := json.Unmarshal(msg.Native.Data, &raws); err == nil && len(raws) > 0 {
			blocks := make([]sdk.ContentBlockParamUnion, len(raws))
			for i, raw := range raws {
				blocks[i] = param.Override[sdk.ContentBlockParamUnion](raw)
			}
			return blocks
		}
		// Unreadable native data: fall back to the neutral fields.
	}
	var blocks []sdk.ContentBlockParamUnion
	if msg.Text != "" {
		blocks = append(blocks, sdk.NewTextBlock(msg.Text))
	}
	for _, c := range msg.Calls {
		blocks = append(blocks, sdk.NewToolUseBlock(c.ID, objectArgs(c.Args), c.Name))
	}
	return blocks
}

// objectArgs returns the call's arguments when they are a JSON object, and
// {} otherwise: the API requires an object, and a call whose arguments did
// not parse was answered with an error result anyway.
func objectArgs(args json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return json.RawMessage(`{}`)
	}
	return trimmed
}
