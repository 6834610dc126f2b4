// Package seed holds an end-to-end test that replays section 1 of the seed
// walk-through (leaders and followers, AR/ISR/OSR, a killed broker, preferred
// election, controller failover) on an in-process ktool cluster, observing and
// operating it with ktool's own commands only, on both coordination stores.
package seed
