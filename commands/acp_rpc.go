package commands

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// JSON-RPC 2.0 over newline-delimited JSON, as the Agent Client Protocol
// frames it: one message a line, LF-terminated (a CR before the LF is
// accepted). encoding/json escapes U+2028 and U+2029 in strings, so a
// message decode writes never holds a raw line separator; reading splits
// on '\n' alone, so one a client sends never splits a message either.

// JSON-RPC error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603
)

// maxRPCLine bounds one incoming message, so that a client that never
// sends a newline cannot grow decode's memory without end.
const maxRPCLine = 64 << 20

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (JSON-RPC error %d)", e.Message, e.Code) }

// rpcConn is one JSON-RPC peer: it writes whole lines under a lock and
// matches the answers to the requests decode sends (permission requests).
type rpcConn struct {
	in  *bufio.Reader
	mu  sync.Mutex // guards out and the write of one line
	out io.Writer

	pmu     sync.Mutex
	nextID  int
	pending map[string]chan rpcMessage
	closed  bool
}

func newRPCConn(in io.Reader, out io.Writer) *rpcConn {
	return &rpcConn{in: bufio.NewReaderSize(in, 64<<10), out: out, pending: map[string]chan rpcMessage{}}
}

// read returns the next message. A line that is not a JSON-RPC message
// is returned as an error of type *rpcError with the id, when one could
// be read, so that the caller answers it and carries on; io.EOF ends.
func (c *rpcConn) read() (rpcMessage, json.RawMessage, error) {
	for {
		line, err := c.readLine()
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				return rpcMessage{}, nil, err
			}
			continue // blank lines between messages are harmless
		}
		var m rpcMessage
		if jerr := json.Unmarshal(line, &m); jerr != nil {
			return m, nil, &rpcError{Code: rpcParseError, Message: "parse error: " + jerr.Error()}
		}
		if m.JSONRPC != "2.0" || (m.Method == "" && m.ID == nil) {
			return m, m.ID, &rpcError{Code: rpcInvalidRequest, Message: `invalid request: a JSON-RPC 2.0 message needs "jsonrpc": "2.0" and a method or an id`}
		}
		return m, m.ID, nil
	}
}

func (c *rpcConn) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := c.in.ReadSlice('\n')
		if len(line)+len(chunk) > maxRPCLine {
			// Drop the rest of the line and report it as malformed.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = c.in.ReadSlice('\n')
			}
			return []byte("\x00too long"), nil
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		return line, err
	}
}

// send writes one message as one line.
func (c *rpcConn) send(m rpcMessage) error {
	m.JSONRPC = "2.0"
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err = c.out.Write(append(data, '\n'))
	return err
}

func (c *rpcConn) reply(id json.RawMessage, result any) error {
	data, err := json.Marshal(result)
	if err != nil {
		return c.replyError(id, &rpcError{Code: rpcInternalError, Message: err.Error()})
	}
	return c.send(rpcMessage{ID: id, Result: data})
}

func (c *rpcConn) replyError(id json.RawMessage, e *rpcError) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	return c.send(rpcMessage{ID: id, Error: e})
}

func (c *rpcConn) notify(method string, params any) error {
	data, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.send(rpcMessage{Method: method, Params: data})
}

// call sends a request to the client and waits for its answer, the
// context's end, or the connection's.
func (c *rpcConn) call(ctx context.Context, method string, params, result any) error {
	data, err := json.Marshal(params)
	if err != nil {
		return err
	}
	c.pmu.Lock()
	if c.closed {
		c.pmu.Unlock()
		return errors.New("the client closed the connection")
	}
	c.nextID++
	id := strconv.Itoa(c.nextID)
	ch := make(chan rpcMessage, 1)
	c.pending[id] = ch
	c.pmu.Unlock()
	defer func() {
		c.pmu.Lock()
		delete(c.pending, id)
		c.pmu.Unlock()
	}()
	if err := c.send(rpcMessage{ID: json.RawMessage(id), Method: method, Params: data}); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case m, ok := <-ch:
		if !ok {
			return errors.New("the client closed the connection")
		}
		if m.Error != nil {
			return m.Error
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(m.Result, result)
	}
}

// answer hands a response from the client to the call waiting for it.
func (c *rpcConn) answer(m rpcMessage) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if ch, ok := c.pending[string(bytes.TrimSpace(m.ID))]; ok {
		ch <- m
	}
}

// close fails every call still waiting for the client.
func (c *rpcConn) close() {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.closed = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}
