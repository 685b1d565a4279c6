package agent

import (
	"context"
	"fmt"

	"den.dev/den/internal/llm"
)

// repair makes a stored history valid before a run adds prompt to it:
// tool calls of the last assistant message that never got results (den
// was killed while they ran) get synthetic error results, sent in the
// same user message as the prompt (two user messages in a row are
// invalid for several APIs). It returns the message to append.
func repair(ctx context.Context, store Store, sessionID string, prompt llm.Message) (llm.Message, error) {
	history, err := store.History(ctx, sessionID)
	if err != nil {
		return prompt, fmt.Errorf("agent: history: %w", err)
	}
	if len(history) == 0 {
		return prompt, nil
	}
	last := history[len(history)-1]
	if last.Role != llm.Assistant {
		return prompt, nil
	}
	calls := llm.Calls(last)
	if len(calls) == 0 {
		return prompt, nil
	}
	msg := llm.Message{Role: llm.User}
	for _, c := range calls {
		msg.Parts = append(msg.Parts, &llm.ToolResult{CallID: c.ID, Name: c.Name, IsError: true,
			Content: []llm.Part{&llm.Text{Text: "no result: den stopped before this call finished"}}})
	}
	msg.Parts = append(msg.Parts, prompt.Parts...)
	return msg, nil
}
