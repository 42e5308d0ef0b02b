// Package codec is the one home of the conversions between Prose's shapes:
// the public API's messages (prose.platform.v1), the language's values
// (package lang; package protovalue below converts them to and from the
// API's Value), the engine's shapes (steps, invocations, guidance as a
// lang.Resolution) and the private stored shapes (prose.persist.v1, under
// store/persist). No other package imports both an API package and the
// stored shapes (TestOnlyCodecBridgesAPIAndStore): a change to the API
// meets the stored bytes here, or nowhere.
//
// Where a stored message mirrors an API message member by member (same
// field numbers and kinds: TestPersistValueMirrorsPlatformValue,
// TestPersistMirrorsPlatform), the conversion re-reads one's encoding as
// the other (Mirror). On the hot paths (a run's inputs, steps and outputs,
// written by every invoke and read by every run rendered) the values are
// written and read at the byte level instead (EncodeValues, DecodeValues,
// EncodeSteps): one encoding, no copy. Mirror is kept, on purpose, for
// what is written when a person configures something (automation details,
// trigger and schedule configurations, agent events, guidance, history
// values): one generic conversion that cannot drift from the messages is
// worth more there than the copy it costs.
package codec
