/** dns's maps: the ring buffer of captured DNS packets and its per-CPU loss counter. */
export const EVENTS_MAP = 'retina_dns_events';
export const LOST_MAP = 'retina_dns_lost';
