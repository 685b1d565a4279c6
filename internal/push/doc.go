// Package push sends den's notifications to the browsers subscribed to
// them with Web Push (package webpush does the protocol): so that a
// phone whose tab is closed still hears that den-notify was called, that
// an approval waits, or that a turn ended.
//
// # What is sent
//
// Handle reads the runtime's events and turns four of them into
// notifications, each sent to every subscription:
//
//   - notify (den-notify in the computer): the title given or "den",
//     the message; tag notify-<event id>.
//   - approval_request: "den needs your approval", the question; tag
//     approval-<approval id>, urgency high, kept by the push service
//     until the approval expires.
//   - a turn that ended: the done event's text (its first 200
//     characters) under the session's title or "den is done", sent when
//     the session's status becomes idle; "den stopped with an error" and
//     the status's detail when it becomes error. A turn stopped by a
//     person or by den stopping sends nothing. Tag and topic
//     done-<session id>: a newer outcome of a session replaces an older
//     one on the device and at the push service.
//
// The payload is the JSON object {"title", "body", "tag", "session_id",
// "url": "/#<session id>", "kind": "notify" | "approval" | "done" |
// "error" | "test"}, cut to fit a push message (texts are shortened with
// "…"; a long text is never an error). It holds what the page would show
// and nothing else: no token, no configuration. It is encrypted to the
// browser's key, so the push service relays it without reading it.
//
// # Delivery
//
// Each subscription has a queue of its own, sent in order by one
// goroutine at a time, so that a slow or failing push service delays
// only its own browser's messages; at most MaxConcurrent sends run at
// once in all, each bounded by SendTimeout (retries included). A queue
// holds at most MaxQueued messages; older ones are dropped past that. A
// subscription the push service answers 404 or 410 is deleted, with
// whatever was queued for it. Handle never waits on a push service.
//
// The VAPID subject is Options.Contact's answer when it is not empty;
// otherwise the https origin the browser subscribed from (Apple's push
// service refuses placeholder subjects such as mailto:den@localhost,
// and accepts the address of the den the phone uses), or DefaultContact
// when there is none.
//
// # Concurrency
//
// A Service is safe for concurrent use. Close cancels the sends in
// flight and waits for every goroutine it started.
package push
