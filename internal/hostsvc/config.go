package hostsvc

import (
	"context"
	"fmt"
)

// Config is den's settings, as den-config may touch them.
type Config interface {
	// Get renders the value at key ("" for everything), secrets masked.
	Get(key string) (string, error)
	// Plan checks that agent may set key to value (an agent may change
	// only a few settings of its own) and returns the exact change, for
	// the person asked, and apply, which makes that change and nothing
	// else: it fails if the setting changed in between.
	Plan(agent, key, value string) (change string, apply func() (old string, err error), err error)
}

func (s *Service) parseConfig(c *Call) (*Plan, *Result) {
	if s.Config == nil {
		return nil, unavailable("", "settings are not available here")
	}
	if len(c.Args) == 0 {
		return nil, invalid("", "want get [KEY] or set KEY VALUE")
	}
	action := c.Args[0]
	args, bad := newFlags("den-config "+action).parse(action, c.Args[1:])
	if bad != nil {
		return nil, bad
	}
	switch action {
	case "get":
		if len(args) > 1 {
			return nil, invalid("get", "want get [KEY]")
		}
		key := ""
		if len(args) == 1 {
			key = args[0]
		}
		return plan("get", key, "", func(context.Context) Result {
			v, err := s.Config.Get(key)
			if err != nil {
				return fail("get", CodeNoData, "%v", err)
			}
			return ok("get", map[string]string{"key": key, "value": v})
		})
	case "set":
		if len(args) != 2 {
			return nil, invalid("set", "want set KEY VALUE")
		}
		key, value := args[0], args[1]
		change, apply, err := s.Config.Plan(c.Agent, key, value)
		if err != nil {
			return nil, invalid("set", "%v", err)
		}
		return plan("set", key, change, func(context.Context) Result {
			old, err := apply()
			if err != nil {
				return fail("set", CodeInvalidArgs, "%v", err)
			}
			return ok("set", map[string]string{"key": key, "old": old, "change": change,
				"revert": fmt.Sprintf("den-config set %s %s", key, orUnset(old))})
		})
	}
	return nil, invalid(action, "unknown action %q: want get or set", action)
}

func orUnset(s string) string {
	if s == "" {
		return `""`
	}
	return s
}
