package daemon

import (
	"context"
	"time"
)

// rollupEvery is how often den serve looks for daily logs to roll up;
// each agent's memory is rolled up at most once in rollupGap.
const (
	rollupEvery = time.Hour
	rollupGap   = 20 * time.Hour
)

// rollups rolls up each agent's old daily logs into its GLOBAL.md once a
// day while den serve runs (see session.Runtime.Rollup), for the agents
// whose memory is on, until ctx ends.
func (d *Daemon) rollups(ctx context.Context) {
	last := map[string]time.Time{}
	t := time.NewTimer(time.Minute) // not in the middle of starting up
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(rollupEvery)
		agents, err := d.st.Agents(ctx)
		if err != nil {
			d.log.Warn("memory rollup: agents not read", "err", err)
			continue
		}
		for _, a := range agents {
			if ctx.Err() != nil {
				return
			}
			if time.Since(last[a]) < rollupGap || !d.rt.Config().Agent(a).MemoryOn() {
				continue
			}
			last[a] = time.Now()
			rolled, sid, err := d.rt.Rollup(ctx, a, time.Now())
			switch {
			case err != nil:
				d.log.Warn("memory rollup failed", "agent", a, "err", err)
			case len(rolled.Logs) > 0:
				d.log.Info("memory rolled up", "agent", a, "logs", len(rolled.Logs), "facts", len(rolled.Facts), "session", sid)
			}
		}
	}
}
