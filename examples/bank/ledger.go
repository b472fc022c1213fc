package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// The ledger the workers share: one znode, the accounts and the log of
// every transfer written, in the order written.
const (
	base       = "/zkrecipes-examples/bank"
	lockPath   = base + "/lock"
	ledgerPath = base + "/ledger"
	opening    = 200 // each account's opening balance
)

var accountNames = []string{"A", "B", "C", "D", "E"}

// total is what the accounts hold together, whatever the transfers.
var total = opening * len(accountNames)

type ledger struct {
	Accounts map[string]int `json:"accounts"`
	Log      []entry        `json:"log"`
}

// entry is one transfer, written by Worker holding the lock with Token.
type entry struct {
	Worker string `json:"worker"`
	Token  int64  `json:"token"`
	From   string `json:"from"`
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

func newLedger() ledger {
	l := ledger{Accounts: map[string]int{}}
	for _, a := range accountNames {
		l.Accounts[a] = opening
	}
	return l
}

func parseLedger(data []byte) (ledger, error) {
	var l ledger
	if err := json.Unmarshal(data, &l); err != nil {
		return l, fmt.Errorf("ledger %s: %w", ledgerPath, err)
	}
	if l.Accounts == nil {
		return l, fmt.Errorf("ledger %s has no accounts", ledgerPath)
	}
	return l, nil
}

func (l ledger) sum() int {
	s := 0
	for _, a := range accountNames {
		s += l.Accounts[a]
	}
	return s
}

func (l ledger) balances() []int {
	out := make([]int, len(accountNames))
	for i, a := range accountNames {
		out[i] = l.Accounts[a]
	}
	return out
}

// has reports whether the log holds the transfer written with token.
func (l ledger) has(token int64) bool {
	for _, e := range l.Log {
		if e.Token == token {
			return true
		}
	}
	return false
}

// transfer moves a random amount between two random accounts and logs it.
func (l *ledger) transfer(worker string, token int64) entry {
	var from string
	for from == "" || l.Accounts[from] == 0 { // total > 0: some account has money
		from = accountNames[rand.IntN(len(accountNames))]
	}
	to := from
	for to == from {
		to = accountNames[rand.IntN(len(accountNames))]
	}
	e := entry{Worker: worker, Token: token, From: from, To: to, Amount: 1 + rand.IntN(min(l.Accounts[from], 100))}
	l.Accounts[from] -= e.Amount
	l.Accounts[to] += e.Amount
	l.Log = append(l.Log, e)
	return e
}

// audit replays the log from the opening balances and returns what is
// wrong with the ledger, if anything: a sum that is not the total, a
// negative balance, tokens that do not strictly increase (two writes
// under one hold, or a write under an older hold than the one before),
// or final balances that the log does not explain (an update lost: two
// writers started from the same state).
func (l ledger) audit() []string {
	var problems []string
	if s := l.sum(); s != total {
		problems = append(problems, fmt.Sprintf("the accounts hold %d, not %d", s, total))
	}
	replay := newLedger()
	var last int64
	for i, e := range l.Log {
		if e.Token <= last {
			problems = append(problems, fmt.Sprintf("transfer %d (%s, token 0x%x) does not follow token 0x%x", i+1, e.Worker, e.Token, last))
		}
		last = e.Token
		replay.Accounts[e.From] -= e.Amount
		replay.Accounts[e.To] += e.Amount
		if replay.Accounts[e.From] < 0 {
			problems = append(problems, fmt.Sprintf("transfer %d (%s) overdraws account %s", i+1, e.Worker, e.From))
		}
	}
	for _, a := range accountNames {
		if replay.Accounts[a] != l.Accounts[a] {
			problems = append(problems, fmt.Sprintf("account %s holds %d, but its transfers add up to %d (an update was lost)", a, l.Accounts[a], replay.Accounts[a]))
		}
	}
	return problems
}

// event is one line a worker prints on its standard output, as JSON, for
// the parent to show and count.
type event struct {
	Kind      string        `json:"kind"` // see the kind* constants
	Worker    string        `json:"-"`    // set by the parent
	Session   int64         `json:"session,omitempty"`
	Timeout   time.Duration `json:"timeout,omitempty"`
	Token     int64         `json:"token,omitempty"`
	Node      string        `json:"node,omitempty"`
	From      string        `json:"from,omitempty"`
	To        string        `json:"to,omitempty"`
	Amount    int           `json:"amount,omitempty"`
	Balances  []int         `json:"balances,omitempty"`
	Acquired  time.Time     `json:"acquired,omitzero"` // when the lock was granted
	State     string        `json:"state,omitempty"`
	Msg       string        `json:"msg,omitempty"`
	Transfers int           `json:"transfers,omitempty"`
	Lost      bool          `json:"lost,omitempty"`
}

// Event kinds. Workers print the first seven; the parent makes the others.
const (
	kindReady   = "ready"   // connected: Session, Timeout
	kindMoved   = "moved"   // a transfer written: Token, From, To, Amount, Balances, Acquired
	kindStall   = "stall"   // holds the lock and stops before writing, as asked: Token, Node
	kindRefused = "refused" // its fenced write was refused: Token, Msg
	kindLost    = "lost"    // noticed that its hold is gone: Msg, Lost, Session (the new one)
	kindState   = "state"   // a connection state: State, Session
	kindNote    = "note"    // anything else worth a line: Msg
	kindDone    = "done"    // stopped as asked: Transfers

	kindExit   = "exit"   // the process ended: Msg (how)
	kindStderr = "stderr" // a line on its standard error: Msg
	kindGone   = "gone"   // the server deleted a lock node the parent watched: Node
)

func formatBalances(b []int) string {
	var s strings.Builder
	for i, v := range b {
		if i > 0 {
			s.WriteByte(' ')
		}
		fmt.Fprintf(&s, "%s=%-4d", accountNames[i], v)
	}
	return strings.TrimSpace(s.String())
}
