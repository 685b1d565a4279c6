// Package retry makes one dependable llm.Model out of an ordered list
// of targets (a model chain or group): it retries failures that may
// pass, falls over to the next target when one will not answer, and
// aborts attempts that stall.
//
// # Classes
//
// Classify sorts an error into a Class:
//
//	rate_limit        HTTP 429, a rate-limit error type
//	overloaded        HTTP 529, an "overloaded" error type or message
//	server            other 5xx
//	network           refused or reset connections, DNS, a stream cut
//	                  mid-way (llm.ErrStream)
//	stall             no stream event within Policy.Stall (ErrStall)
//	empty             a completion with nothing in it (llm.ErrEmpty, or
//	                  an end_turn Done after no text, thinking or call)
//	auth              HTTP 401/402/403, an exhausted quota, llm.ErrNoKey
//	invalid           HTTP 400/404/422: the provider rejected the request
//	context_overflow  the prompt does not fit ("prompt is too long",
//	                  context_length_exceeded, "exceeds the maximum
//	                  number of tokens", ...)
//	refusal           a content-policy rejection
//	canceled          the caller's context ended
//	unknown           anything else
//
// # What happens on a failure
//
// The retryable classes (rate_limit, overloaded, server, network,
// stall, empty) are tried again on the same target after
// Policy.Delays[k] for the k-th retry (default 3, 5, 10, 15, 30 s), or
// after the server's Retry-After when that is longer. Once the delays
// are used up, or when the server asks for a wait longer than
// Policy.MaxRetryAfter (default 5 min), the next target answers.
// auth and invalid move to the next target at once. context_overflow,
// refusal and canceled end the turn: another model would do no
// better, and the caller must act (compact, rephrase, stop). unknown
// ends the turn too. With Strategy "always", every failure but the
// terminal ones moves to the next target at once; the last target
// still retries. When no target is left the error is an
// *ExhaustedError saying what each target did.
//
// Each attempt's request is fitted to its target with models.Prepare
// (model name, output limit, thinking). A refusal the model streams
// (a Done with llm.StopRefusal) is a complete turn and passes through;
// the refusal class is for requests a provider rejects on policy.
//
// Targets with no API key are skipped without a request, unless their
// base URL is a server on this machine (Ollama, llama.cpp), as are
// targets whose adapter fails to open; they appear in the final error.
//
// # Events
//
// Each attempt starts with *llm.Answered naming its target's ref, then
// the target's own events. A failed attempt, whether or not it had
// streamed anything, is followed by *llm.Retry: Attempt counts the
// retries of the turn from 1, Delay is the wait before the next attempt
// (0 when moving to another target), Reason is "class: error", Model
// the ref the next attempt uses. Consumers drop what a failed attempt
// streamed when they see the Retry (llm.Collector does). A stream that
// ends without *llm.Done counts as a network failure. The last
// *llm.Answered before the Done names the target that answered the
// turn; the Model keeps no record of it, so that concurrent turns (a
// summary beside a conversation) cannot read each other's.
//
// # Stalls
//
// A per-event timer runs while Model waits for the provider (not while
// the consumer handles an event); when it fires, the attempt's context
// is canceled, which aborts the request, and the failure is a stall. No
// goroutine outlives a turn, and a consumer's break cancels the request
// in flight.
package retry
