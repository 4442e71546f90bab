package idempotency

import (
	"reflect"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// DefaultCacheSize is the number of completed keys DefaultCache holds.
const DefaultCacheSize = 1024

// DefaultCache is the warm-process cache Do and Middleware use unless a Config names another
// cache or disables caching.
var DefaultCache = NewCache(DefaultCacheSize)

// Cache is an LRU cache of COMPLETED records, so that a duplicate arriving at the same warm
// process (a Lambda container reused) is answered without a store request. Entries are keyed by
// store and key and honour the record's expiration. It is safe for concurrent use.
//
// A cached record can outlive the stored one when another process deletes it; records are only
// deleted while INPROGRESS, so a COMPLETED record changes only by expiring, which the cache
// checks itself.
type Cache struct {
	lru *lru.Cache[cacheKey, Record]
}

type cacheKey struct {
	store Store
	key   string
}

// NewCache returns a cache of at most size completed records (size < 1 means DefaultCacheSize).
func NewCache(size int) *Cache {
	if size < 1 {
		size = DefaultCacheSize
	}
	c, err := lru.New[cacheKey, Record](size)
	if err != nil { // only for size < 1, excluded above
		panic(err)
	}
	return &Cache{lru: c}
}

// Len returns the number of cached records.
func (c *Cache) Len() int { return c.lru.Len() }

// Purge empties the cache.
func (c *Cache) Purge() { c.lru.Purge() }

// cacheable reports whether store can key the cache (pointer stores can; a store whose dynamic
// type is not comparable cannot, and is simply not cached).
func cacheable(store Store) bool {
	return store != nil && reflect.TypeOf(store).Comparable()
}

// get returns the live COMPLETED record of key in store, if cached.
func (c *Cache) get(store Store, key string, now time.Time) (*Record, bool) {
	if c == nil || !cacheable(store) {
		return nil, false
	}
	k := cacheKey{store: store, key: key}
	rec, ok := c.lru.Get(k)
	if !ok {
		return nil, false
	}
	if rec.Expired(now) {
		c.lru.Remove(k)
		return nil, false
	}
	return &rec, true
}

// add caches rec if it is COMPLETED.
func (c *Cache) add(store Store, rec *Record) {
	if c == nil || rec == nil || rec.Status != StatusCompleted || !cacheable(store) {
		return
	}
	c.lru.Add(cacheKey{store: store, key: rec.Key}, stored(rec))
}
