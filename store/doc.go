// Package store is what the datasets of a daemon share, whatever their
// format. It owns, once for every format: the storage stack a source is
// read through (Store.Wrap: retries, the shared rate limit, or offline
// stand-ins, as the composition root decides); the disk cache and the
// versioned ranged reads through it (Source: ReadAt and OpenAt name an
// object's version, an offset and a length, and what the bytes are for;
// the disk cache decides where they come from); each source's index
// directory, with the files derived from its bytes and keyed on their
// identity (LoadDerived, SaveDerived) and its offline record (SaveRecord,
// ReadRecord); the lifetime of shared work (Begin, Context); and the
// statistics of every format's episode loads (Stats; the ranged reads
// are counted by the disk cache).
//
// A format opens its datasets over a Store (rlds.Open, lerobot.Options)
// and asks it for bytes; it never steers the disk cache. Bytes that fail
// the format's own check it reports as a Suspect (Source.Recheck), and
// the store decides: read again, compare, look at the whole object
// checked against its source's checksum, keep, or call them corrupt. store imports
// only storage and its decorators: it knows no format.
package store
