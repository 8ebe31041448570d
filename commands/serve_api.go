package commands

import (
	"bytes"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"decode/agent"
	"decode/session"
)

// apiSession is a session as the web API lists it.
type apiSession struct {
	infoJSON
	Damage string `json:"damage,omitempty"`
}

// apiWaiting is a request a paused session waits for.
type apiWaiting struct {
	session.ApprovalRequestData
	Decision *session.ApprovalData `json:"decision,omitempty"`
}

// apiSessions lists sessions newest first. Filters: status (comma
// separated), model (exact), since (a duration: updated within it), limit.
func (s *server) apiSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var since time.Duration
	if v := q.Get("since"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			httpError(w, http.StatusBadRequest, "since=%q: want a positive duration such as 90m or 48h", v)
			return
		}
		since = d
	}
	limit, ok := queryInt(w, q.Get("limit"), "limit", 0)
	if !ok {
		return
	}
	var statuses []string
	if v := q.Get("status"); v != "" {
		statuses = strings.Split(v, ",")
	}
	infos, err := s.st.List(r.Context())
	if err != nil {
		storeError(w, err)
		return
	}
	now := time.Now()
	out := []apiSession{}
	for _, in := range infos {
		switch {
		case in.BrokenRef:
			continue
		case statuses != nil && !slices.Contains(statuses, string(in.Status)):
			continue
		case q.Get("model") != "" && in.Model != q.Get("model"):
			continue
		case since > 0 && now.Sub(in.Updated) > since:
			continue
		}
		out = append(out, apiSession{infoJSON: listJSON([]session.Info{in})[0], Damage: in.Damage})
		if limit > 0 && len(out) == limit {
			break
		}
	}
	writeAPI(w, map[string]any{"sessions": out})
}

// queryInt reads a non-negative integer parameter (def when absent),
// answering 400 when it is not one.
func queryInt(w http.ResponseWriter, v, name string, def int) (int, bool) {
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		httpError(w, http.StatusBadRequest, "%s=%q: want a non-negative integer", name, v)
		return 0, false
	}
	return n, true
}

// apiSession answers one session: its summary, what it waits for, and its
// place among forks.
func (s *server) apiSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.st.Open(r.Context(), r.PathValue("id"))
	if err != nil {
		storeError(w, err)
		return
	}
	writeAPI(w, sessionSummary(sess))
}

func sessionSummary(sess *session.Session) map[string]any {
	es := sess.Entries()
	pending := []apiWaiting{}
	for _, p := range agent.Pending(es) {
		pending = append(pending, apiWaiting{p.Request, p.Decision})
	}
	node := nodeOf(sess.ID(), es)
	return map[string]any{
		"session": listJSON([]session.Info{sess.Info()})[0],
		"pending": pending,
		"parent":  node.Parent,
		"at":      node.At,
		"replay":  node.Replay,
		"last_id": lastID(es),
	}
}

func lastID(es []session.Entry) int {
	if len(es) == 0 {
		return 0
	}
	return es[len(es)-1].ID
}

// maxPage caps the entries one page of the API returns.
const maxPage = 1000

// apiEntries answers a page of a session's entries: ids from "from"
// (default 1), at most "limit" (default 200, at most 1000); next is the
// id to ask for the following page, 0 at the end.
func (s *server) apiEntries(w http.ResponseWriter, r *http.Request) {
	from, ok := queryInt(w, r.URL.Query().Get("from"), "from", 1)
	if !ok {
		return
	}
	limit, ok := queryInt(w, r.URL.Query().Get("limit"), "limit", 200)
	if !ok {
		return
	}
	limit = min(max(limit, 1), maxPage)
	sess, err := s.st.Open(r.Context(), r.PathValue("id"))
	if err != nil {
		storeError(w, err)
		return
	}
	es := sess.Entries()
	i, _ := slices.BinarySearchFunc(es, from, func(e session.Entry, id int) int { return e.ID - id })
	page := es[i:min(i+limit, len(es))]
	next := 0
	if i+limit < len(es) {
		next = es[i+limit].ID
	}
	writeAPI(w, map[string]any{"session": sess.ID(), "entries": nonNil(page), "next": next, "problems": len(sess.Problems())})
}

// apiStat answers decode log --stat's figures, with the code each step
// changed.
func (s *server) apiStat(w http.ResponseWriter, r *http.Request) {
	sess, err := s.st.Open(r.Context(), r.PathValue("id"))
	if err != nil {
		storeError(w, err)
		return
	}
	stat := statOf(sess)
	if stat.Code, err = codeSteps(r.Context(), s.st, sess.Entries()); err != nil {
		storeError(w, err)
		return
	}
	writeAPI(w, stat)
}

// apiDiff answers decode log --diff A B, with each side's figures.
func (s *server) apiDiff(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("a") == "" || q.Get("b") == "" {
		httpError(w, http.StatusBadRequest, "diff needs two sessions: /api/v1/diff?a=A&b=B")
		return
	}
	a, err := s.st.Open(r.Context(), q.Get("a"))
	if err != nil {
		storeError(w, err)
		return
	}
	b, err := s.st.Open(r.Context(), q.Get("b"))
	if err != nil {
		storeError(w, err)
		return
	}
	d := diffSessions(a.ID(), a.Entries(), b.ID(), b.Entries())
	writeAPI(w, map[string]any{"diff": d, "a_stat": statOf(a), "b_stat": statOf(b)})
}

// apiCode answers decode diff: the code change from "from"
// (SESSION[@ENTRY], default the session's first snapshot) to "to" (an
// entry of this session, default its last snapshot), as a unified diff;
// format=stat or name-only as decode diff's flags.
func (s *server) apiCode(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := r.PathValue("id")
	point := id
	if at := q.Get("at"); at != "" {
		point += "@" + at
	}
	to, es, err := codeAt(r.Context(), s.st, point)
	if err != nil {
		codeError(w, err)
		return
	}
	from := session.Snapshots(es)[0]
	if f := q.Get("from"); f != "" {
		if from, _, err = codeAt(r.Context(), s.st, f); err != nil {
			codeError(w, err)
			return
		}
	}
	format := session.DiffPatch
	switch q.Get("format") {
	case "stat":
		format = session.DiffStat
	case "name-only":
		format = session.DiffNameOnly
	}
	var b bytes.Buffer
	if err := s.st.Diff(r.Context(), &b, from.Tree, to.Tree, format); err != nil {
		storeError(w, err)
		return
	}
	writeAPI(w, map[string]any{"from": from, "to": to, "diff": b.String()})
}

func codeError(w http.ResponseWriter, err error) {
	var ue *UsageError
	switch {
	case errors.As(err, &ue):
		httpError(w, http.StatusBadRequest, "%s", err.Error())
	case strings.Contains(err.Error(), "no code snapshots"), strings.Contains(err.Error(), "has no entry"):
		httpError(w, http.StatusNotFound, "%s", err.Error())
	default:
		storeError(w, err)
	}
}

// treeNode is a session in the tree of forks and replays.
type treeNode struct {
	ID          string `json:"id"`
	Parent      string `json:"parent,omitempty"` // the session it was forked or replayed from
	At          int    `json:"at,omitempty"`     // the entry of Parent it branched at
	Replay      bool   `json:"replay,omitempty"`
	Status      string `json:"status"`
	Model       string `json:"model"`
	Title       string `json:"title"`
	Created     string `json:"created"`
	Entries     int    `json:"entries"`
	Compactions int    `json:"compactions"`
	Pauses      int    `json:"pauses"`
	tip         string
}

// treeCache keeps each session's node by its tip, so a tree is read again
// only for sessions that moved.
type treeCache struct {
	mu    sync.Mutex
	nodes map[string]treeNode
}

// nodeOf reads a session's place in the tree from its entries: the last
// fork entry names the session it branched from.
func nodeOf(id string, es []session.Entry) treeNode {
	n := treeNode{ID: id}
	for _, e := range es {
		switch e.Type {
		case session.TypeFork:
			var d session.ForkData
			if e.Decode(&d) == nil && d.From != id {
				n.Parent, n.At, n.Replay = d.From, d.At, d.Replay
			}
		case session.TypeCompaction:
			n.Compactions++
		case session.TypeApprovalReq:
			n.Pauses++
		}
	}
	return n
}

// apiTree answers the tree the session belongs to: every session of its
// family (the root it was forked from, transitively, and all branches of
// that root), each with its parent and fork point.
func (s *server) apiTree(w http.ResponseWriter, r *http.Request) {
	id, err := s.st.Resolve(r.Context(), r.PathValue("id"))
	if err != nil {
		storeError(w, err)
		return
	}
	nodes, err := s.nodes(r)
	if err != nil {
		storeError(w, err)
		return
	}
	root := id
	for seen := map[string]bool{}; nodes[root].Parent != "" && !seen[root]; root = nodes[root].Parent {
		seen[root] = true
		if _, ok := nodes[nodes[root].Parent]; !ok {
			break // the parent is gone (deleted or not fetched)
		}
	}
	children := map[string][]string{}
	for _, n := range nodes {
		if n.Parent != "" {
			children[n.Parent] = append(children[n.Parent], n.ID)
		}
	}
	out := []treeNode{}
	queue := []string{root}
	seen := map[string]bool{}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if seen[cur] {
			continue
		}
		seen[cur] = true
		out = append(out, nodes[cur])
		kids := children[cur]
		slices.SortFunc(kids, func(a, b string) int { return strings.Compare(nodes[a].Created, nodes[b].Created) })
		queue = append(queue, kids...)
	}
	writeAPI(w, map[string]any{"root": root, "session": id, "nodes": out})
}

// nodes returns every session's tree node, reading again only the sessions
// whose tip moved since the last call.
func (s *server) nodes(r *http.Request) (map[string]treeNode, error) {
	tips, err := s.st.Tips(r.Context())
	if err != nil {
		return nil, err
	}
	s.tree.mu.Lock()
	defer s.tree.mu.Unlock()
	for id := range s.tree.nodes {
		if _, ok := tips[id]; !ok {
			delete(s.tree.nodes, id)
		}
	}
	for id, tip := range tips {
		if n, ok := s.tree.nodes[id]; ok && n.tip == tip {
			continue
		}
		sess, err := s.st.Open(r.Context(), id)
		if err != nil {
			continue // damaged: decode log --check says why
		}
		es := sess.Entries()
		n := nodeOf(id, es)
		in := sess.Info()
		n.Status, n.Model, n.Title, n.Entries, n.tip = string(in.Status), in.Model, in.Title, len(es), tip
		n.Created = in.Created.UTC().Format(time.RFC3339Nano)
		s.tree.nodes[id] = n
	}
	return maps.Clone(s.tree.nodes), nil
}
