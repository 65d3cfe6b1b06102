//! The gateway's metrics, declared once: [`FAMILIES`] names each family and its help, and
//! [`Metrics`] holds one counter per series (its family and labels written beside the
//! field), so that `/metrics` ([`Metrics::render`]) and the code that counts share one
//! list. Gauges computed at scrape time (sessions, nodes, instances, the store's queue)
//! are rendered by the admin source in `server.rs`.

use std::sync::atomic::{AtomicU64, Ordering};

use shared::metrics_text::{Histogram, MetricsText, family_help, render_series};

/// Every family the gateway's counters and histogram render into: name and help.
pub const FAMILIES: &[(&str, &str)] = &[
    (
        "rc_gateway_connections_accepted_total",
        "Client connections accepted.",
    ),
    (
        "rc_gateway_connections_refused_total",
        "Client connections refused at the door, by reason: full (max_connections open), per_ip (max_connections_per_ip open on its network), rate (its network opened connections_per_ip_per_minute), shutting_down.",
    ),
    (
        "rc_gateway_handshake_timeouts_total",
        "Clients that never opened their stream in time.",
    ),
    (
        "rc_gateway_protocol_violations_total",
        "Connections closed with code 2.",
    ),
    (
        "rc_gateway_client_packets_ignored_total",
        "Packets Realm Crafter never handled (P_FetchItems, P_SelectScenery) ignored before login.",
    ),
    (
        "rc_gateway_retries_total",
        "Connections asked to prove their address (QUIC Retry) above retry_above or retry_above_rate.",
    ),
    (
        "rc_gateway_login_deadlines_total",
        "Connections closed for not logging in within login_deadline_ms.",
    ),
    (
        "rc_gateway_hash_waits_total",
        "Logins that waited for a password-hash slot (max_concurrent_hashes).",
    ),
    (
        "rc_gateway_chat_limited_total",
        "Chat messages dropped by the per-player chat limit.",
    ),
    (
        "rc_gateway_logins_total",
        "Sessions that entered the world.",
    ),
    (
        "rc_gateway_compact_sessions_total",
        "Client connections that negotiated the compact profile (rc-compact/1).",
    ),
    (
        "rc_gateway_compact_bad_input_total",
        "Compact client datagrams refused by the decoder (also in rc_gateway_datagrams_dropped_total{reason=\\\"bad_input\\\"}).",
    ),
    (
        "rc_gateway_compact_unknown_acks_total",
        "Compact acknowledgements of a tick never sent or already forgotten (ignored).",
    ),
    (
        "rc_gateway_compact_entries_dropped_total",
        "Snapshot entries left out of a compact tick (it needed more than 16 datagrams).",
    ),
    (
        "rc_gateway_compact_ticks_total",
        "Broadcast ticks sent on the compact profile, by coding (against an acknowledged tick, or full).",
    ),
    (
        "rc_gateway_datagrams_up_total",
        "Client datagrams forwarded to zone nodes.",
    ),
    (
        "rc_gateway_datagrams_down_total",
        "Zone datagrams forwarded to clients.",
    ),
    (
        "rc_gateway_frames_up_total",
        "Reliable client frame batches forwarded to zones.",
    ),
    (
        "rc_gateway_frames_down_total",
        "Reliable frame batches written to clients.",
    ),
    (
        "rc_gateway_frames_dropped_total",
        "Client frames dropped while no zone was attached.",
    ),
    (
        "rc_gateway_client_queue_overflows_total",
        "Clients closed for not keeping up.",
    ),
    (
        "rc_gateway_snapshots_saved_total",
        "Character snapshots stored and acknowledged.",
    ),
    (
        "rc_gateway_snapshots_orphaned_total",
        "Snapshots that matched no character.",
    ),
    (
        "rc_gateway_snapshot_groups_saved_total",
        "Zone checkpoint groups (players saved together, ground items) stored and acknowledged.",
    ),
    (
        "rc_gateway_snapshot_group_entries_total",
        "Character snapshots inside the checkpoint groups stored.",
    ),
    (
        "rc_gateway_snapshot_groups_refused_total",
        "Checkpoint groups refused as a whole: a stale generation or a session the node does not host (also in fenced).",
    ),
    (
        "rc_gateway_internal_refused_total",
        "Internal messages refused.",
    ),
    (
        "rc_gateway_transfers_routed_total",
        "SetArea transfers routed between nodes.",
    ),
    (
        "rc_gateway_transfers_refused_total",
        "SetArea transfers refused.",
    ),
    (
        "rc_gateway_instances_lost_total",
        "AreaInstances lost with their node.",
    ),
    (
        "rc_gateway_handoffs_started_total",
        "SetArea handoffs between nodes begun.",
    ),
    (
        "rc_gateway_handoffs_completed_total",
        "SetArea handoffs committed at their destination.",
    ),
    (
        "rc_gateway_handoffs_rolled_back_total",
        "SetArea handoffs refused, aborted or timed out (the actor stayed at its source).",
    ),
    (
        "rc_gateway_recoveries_total",
        "Players put back from their last save after their zone node was lost.",
    ),
    (
        "rc_gateway_fenced_total",
        "Snapshots and frames refused because their node no longer hosts the session.",
    ),
    (
        "rc_gateway_chat_commands_total",
        "Chat commands handled by the gateway.",
    ),
    (
        "rc_gateway_script_store_requests_total",
        "Script store requests from the zones (files, super globals, instances).",
    ),
    (
        "rc_gateway_remote_query_seconds",
        "From a script's query, action or walk on an actor another zone hosts, forwarded by the gateway, to that zone's answer.",
    ),
    (
        "rc_gateway_remote_actions_total",
        "Scripts' actions on players another zone hosts (GiveItem, SetAttribute, Warp, ... of a remote handle), by result: taken by the hosting zone, or failed (the player left the game or was not found in time).",
    ),
    (
        "rc_gateway_remote_action_retries_total",
        "Scripts' actions on remote players delivered again because the zone asked did not have the player then (a handoff, a node loss).",
    ),
    (
        "rc_gateway_script_reloads_total",
        "Script reloads (RefreshScripts, admin reload-scripts), by result: applied on every node, or refused because the scripts do not compile (nothing changed).",
    ),
    (
        "rc_gateway_script_store_refused_total",
        "Script store requests refused or failed (bad name, limit, failed write).",
    ),
    (
        "rc_gateway_login_failures_total",
        "Logins refused, by reason (throttled: closed by the login or account-creation limit, code 4; unavailable: the account is quarantined, code 5).",
    ),
    (
        "rc_gateway_datagrams_dropped_total",
        "Datagrams dropped, by reason: bad_input (a client's, malformed, of the wrong type, not in game or with no route), client_refused (a zone's, not sent or lost on its client's connection: too large for its path, closed, or pushed out of a full send buffer), unroutable (a zone's datagram or frame for a session that is gone). A fenced node's writes are in rc_gateway_fenced_total.",
    ),
    (
        "rc_gateway_client_bytes_total",
        "Payload bytes between clients and the gateway (QUIC framing not included).",
    ),
    (
        "rc_gateway_handoff_latency_seconds",
        "From a node's Transfer to the commit sent to its destination.",
    ),
    (
        "rc_gateway_handout_commit_seconds",
        "From a character's hand-out (a new fencing token: a login, a recovery) to the store's commit of it; a login's AttachPlayer waits for it.",
    ),
    (
        "rc_gateway_input_dropped_total",
        "In-game client inputs dropped past the player's budget for their action (input_budgets, chat_per_second), by action.",
    ),
    (
        "rc_gateway_input_kicks_total",
        "Players disconnected for sustained input past their budgets (input_kick_drops; close code 4).",
    ),
    (
        "rc_gateway_lobby_refused_total",
        "Client connections refused because connections not yet in the world hold pregame_share_percent of max_connections and none could be displaced.",
    ),
    (
        "rc_gateway_lobby_displaced_total",
        "Connections not logged in after lobby_grace_ms closed (code 4) to make room for a new one.",
    ),
    (
        "rc_gateway_menu_deadlines_total",
        "Connections closed for not entering the world within menu_deadline_ms.",
    ),
    (
        "rc_gateway_internal_preauth_refused_total",
        "Zone-node connections refused before authentication, by reason: cap (internal_preauth_max not yet authenticated), frame (a frame above internal_preauth_frame_len).",
    ),
    (
        "rc_gateway_store_refused_total",
        "Client requests refused for the store (closed with code 5), by reason: out_of_service (a login, new account or character change while the store fails), write_failed (the change was tried, its write failed, and it was undone).",
    ),
    (
        "rc_gateway_store_rewrites_total",
        "Writes submitted again from the gateway's memory after the store healed (what failed writes had left unsaved: an account, an instance's ground, the handle floor).",
    ),
    (
        "rc_gateway_instances_stuck_total",
        "Times a node reported an AreaInstance stuck (its tick watchdog: no tick completed for stuck_tick_ms); no new player goes to it meanwhile.",
    ),
    (
        "rc_gateway_enet_connections_total",
        "RCEnet (ENet 1.1) peers past the handshake that got a session (also in rc_gateway_connections_accepted_total).",
    ),
    (
        "rc_gateway_enet_bytes_total",
        "Bytes of RCEnet UDP datagrams, by direction (ENet headers included).",
    ),
    (
        "rc_gateway_enet_send_dropped_total",
        "RCEnet datagrams not sent: refused by the kernel, or dropped while too many waited for room in the socket's send buffer.",
    ),
    (
        "rc_gateway_enet_packets_total",
        "RC packets carried by RCEnet, by direction.",
    ),
    (
        "rc_gateway_enet_dropped_total",
        "RCEnet input dropped, by reason: malformed (datagrams ENet refuses), reserved_type (RC types 200-202 from the network), bad_packet (empty, or an unreliable packet other than P_StandardUpdate on channel 2), half_open (CONNECTs past enet_half_open or enet_half_open_per_ip that got no cookie), half_open_expired (handshakes not completed in enet_connect_timeout_ms), inbound_overflow (a peer disconnected for flooding its session).",
    ),
    (
        "rc_gateway_enet_timeouts_total",
        "RCEnet peers dropped by ENet's timeout (no acknowledgement), as Realm Crafter's PlayerHasLeft.",
    ),
    (
        "rc_gateway_enet_retransmits_total",
        "Reliable ENet commands sent again.",
    ),
    (
        "rc_gateway_enet_throttled_total",
        "Unreliable RCEnet packets (positions) dropped unsent by ENet's throttle while their peer's round trip rose (enet_throttle).",
    ),
    (
        "rc_gateway_enet_cookies_total",
        "RCEnet stateless handshake cookies (CONNECTs past enet_half_open or enet_half_open_per_ip), by outcome: sent (a cookie VERIFY_CONNECT sent, no state kept), connected (a client's ACK carried a valid cookie: a peer made), bad (an ACK to a free slot with a wrong or expired cookie, dropped), refused (cookie replies past their per-second bound: the CONNECT refused).",
    ),
    ("rc_gateway_enet_peers", "RCEnet peers connected now."),
    (
        "rc_gateway_enet_half_open",
        "RCEnet connections in ENet's handshake now (half-open).",
    ),
    (
        "rc_gateway_instances_given_up_total",
        "AreaInstances a node's tick watchdog gave up: placed anew with a new generation, their players put back from their last saves.",
    ),
];

shared::counters! {
    /// Gateway-wide counters (monotonic), one per series of a family in [`FAMILIES`].
    pub struct Metrics {
        /// Client connections accepted.
        connections_accepted => "rc_gateway_connections_accepted_total";
        /// Client connections refused: `max_connections` open.
        refused_full => "rc_gateway_connections_refused_total" ["reason" = "full"];
        /// Connections refused because their network has `max_connections_per_ip` open.
        refused_per_ip => "rc_gateway_connections_refused_total" ["reason" = "per_ip"];
        /// Connections refused because their network opened `connections_per_ip_per_minute`.
        refused_rate => "rc_gateway_connections_refused_total" ["reason" = "rate"];
        /// Client connections refused: the gateway is shutting down.
        refused_shutting_down => "rc_gateway_connections_refused_total" ["reason" = "shutting_down"];
        /// Clients that connected but never opened their stream in time.
        handshake_timeouts => "rc_gateway_handshake_timeouts_total";
        /// Connections closed for a protocol violation (code 2).
        protocol_violations => "rc_gateway_protocol_violations_total";
        /// Packets Realm Crafter never handled (`P_FetchItems`, `P_SelectScenery`) ignored
        /// before login.
        client_packets_ignored => "rc_gateway_client_packets_ignored_total";
        /// Connections asked to prove their address (QUIC Retry) under load.
        retries => "rc_gateway_retries_total";
        /// Connections closed for not logging in within `login_deadline_ms`.
        login_deadlines => "rc_gateway_login_deadlines_total";
        /// Logins that waited for a password-hash slot (`max_concurrent_hashes`).
        hash_waits => "rc_gateway_hash_waits_total";
        /// Chat messages dropped by the per-player chat limit.
        chat_limited => "rc_gateway_chat_limited_total";
        /// Successful `P_StartGame`s.
        logins => "rc_gateway_logins_total";
        /// Connections that negotiated the compact profile (`rc-compact/1`).
        compact_sessions => "rc_gateway_compact_sessions_total";
        /// Compact client datagrams refused by the decoder (garbage, truncated, out of range).
        compact_bad_input => "rc_gateway_compact_bad_input_total";
        /// Compact acknowledgements of a tick never sent or forgotten (ignored).
        compact_unknown_acks => "rc_gateway_compact_unknown_acks_total";
        /// Snapshot entries left out of a compact tick (more than 16 datagrams).
        compact_entries_dropped => "rc_gateway_compact_entries_dropped_total";
        /// Compact ticks coded against an acknowledged base.
        compact_ticks_delta => "rc_gateway_compact_ticks_total" ["coding" = "delta"];
        /// Compact ticks coded as full entries (no acknowledged base).
        compact_ticks_full => "rc_gateway_compact_ticks_total" ["coding" = "full"];
        /// Client datagrams forwarded to zone nodes.
        datagrams_up => "rc_gateway_datagrams_up_total";
        /// Zone datagrams forwarded to clients.
        datagrams_down => "rc_gateway_datagrams_down_total";
        /// Reliable client frames forwarded to zones.
        frames_up => "rc_gateway_frames_up_total";
        /// Reliable frame batches forwarded to clients.
        frames_down => "rc_gateway_frames_down_total";
        /// Client frames dropped (queue for an unattached zone full).
        frames_dropped => "rc_gateway_frames_dropped_total";
        /// Clients closed because their outbound queue overflowed.
        client_queue_overflows => "rc_gateway_client_queue_overflows_total";
        /// Snapshots stored and acknowledged.
        snapshots_saved => "rc_gateway_snapshots_saved_total";
        /// Snapshots that matched no character.
        snapshots_orphaned => "rc_gateway_snapshots_orphaned_total";
        /// Checkpoint groups (`SnapshotGroup`) stored and acknowledged.
        snapshot_groups_saved => "rc_gateway_snapshot_groups_saved_total";
        /// Character snapshots inside the checkpoint groups stored.
        snapshot_group_entries => "rc_gateway_snapshot_group_entries_total";
        /// Checkpoint groups refused as a whole (stale generation, or a session the sender
        /// does not host); also counted in `fenced`.
        snapshot_groups_refused => "rc_gateway_snapshot_groups_refused_total";
        /// Internal messages refused (bad auth, malformed, unexpected).
        internal_refused => "rc_gateway_internal_refused_total";
        /// Transfers routed between nodes.
        transfers_routed => "rc_gateway_transfers_routed_total";
        /// Transfers refused (no such area, no node, timeout).
        transfers_refused => "rc_gateway_transfers_refused_total";
        /// Instances lost with their node.
        instances_lost => "rc_gateway_instances_lost_total";
        /// Handoffs between nodes begun (a node sent `Transfer`).
        handoffs_started => "rc_gateway_handoffs_started_total";
        /// Handoffs committed (the route switched to the destination).
        handoffs_completed => "rc_gateway_handoffs_completed_total";
        /// Handoffs refused, aborted or timed out: the actor stayed at its source.
        handoffs_rolled_back => "rc_gateway_handoffs_rolled_back_total";
        /// Players put back from their last save after their node was lost.
        recoveries => "rc_gateway_recoveries_total";
        /// Snapshots and frames refused because their node no longer hosts the session.
        fenced => "rc_gateway_fenced_total";
        /// Chat commands handled by the gateway.
        chat_commands => "rc_gateway_chat_commands_total";
        /// Script store requests from the zones (files, super globals, instances).
        script_store_requests => "rc_gateway_script_store_requests_total";
        /// Script store requests refused or failed (a bad name, a limit, a failed write).
        script_store_refused => "rc_gateway_script_store_refused_total";
        /// Script reloads sent to every node.
        script_reloads => "rc_gateway_script_reloads_total" ["result" = "applied"];
        /// Script reloads refused (the scripts do not compile or cannot be read).
        script_reloads_refused => "rc_gateway_script_reloads_total" ["result" = "refused"];
        /// Scripts' actions on players other zones host, taken by the hosting zone.
        remote_actions => "rc_gateway_remote_actions_total" ["result" = "taken"];
        /// Such actions given up (the player left the game, or was not found in time).
        remote_actions_failed => "rc_gateway_remote_actions_total" ["result" = "failed"];
        /// Such actions delivered again (their zone did not have the player then).
        remote_action_retries => "rc_gateway_remote_action_retries_total";
        /// Logins refused: wrong user name or password.
        login_bad_password => "rc_gateway_login_failures_total" ["reason" = "bad_password"];
        /// Logins refused: the account is banned.
        login_banned => "rc_gateway_login_failures_total" ["reason" = "banned"];
        /// Logins refused: the account is already in the game.
        login_logged_on => "rc_gateway_login_failures_total" ["reason" = "logged_on"];
        /// Connections closed by the login throttle (code 4).
        rate_limited => "rc_gateway_login_failures_total" ["reason" = "throttled"];
        /// Logins refused: the account's stored row is unreadable (quarantined, code 5).
        login_unavailable => "rc_gateway_login_failures_total" ["reason" = "unavailable"];
        /// Client datagrams dropped (malformed, wrong type, not in game, no route).
        bad_datagrams => "rc_gateway_datagrams_dropped_total" ["reason" = "bad_input"];
        /// Zone datagrams not sent or lost on a client connection (too large for its path,
        /// closed, or pushing an older one out of its full send buffer).
        datagrams_down_dropped => "rc_gateway_datagrams_dropped_total" ["reason" = "client_refused"];
        /// Zone datagrams for sessions that are gone.
        datagrams_unroutable => "rc_gateway_datagrams_dropped_total" ["reason" = "unroutable"];
        /// Payload bytes of the clients' reliable streams received.
        bytes_up_stream => "rc_gateway_client_bytes_total" ["direction" = "up", "kind" = "stream"];
        /// Payload bytes of the clients' datagrams received.
        bytes_up_datagram => "rc_gateway_client_bytes_total" ["direction" = "up", "kind" = "datagram"];
        /// Payload bytes written to the clients' reliable streams.
        bytes_down_stream => "rc_gateway_client_bytes_total" ["direction" = "down", "kind" = "stream"];
        /// Payload bytes of the datagrams sent to clients.
        bytes_down_datagram => "rc_gateway_client_bytes_total" ["direction" = "down", "kind" = "datagram"];
        /// Players disconnected for sustained input past their budgets.
        input_kicks => "rc_gateway_input_kicks_total";
        /// Connections refused: the lobby (`pregame_share_percent`) is full, no idler to
        /// displace.
        refused_lobby => "rc_gateway_lobby_refused_total";
        /// Idle connections closed to make room for a new one.
        displaced => "rc_gateway_lobby_displaced_total";
        /// Connections closed for not entering the world within `menu_deadline_ms`.
        menu_deadlines => "rc_gateway_menu_deadlines_total";
        /// Node connections refused: `internal_preauth_max` not yet authenticated.
        internal_preauth_cap => "rc_gateway_internal_preauth_refused_total" ["reason" = "cap"];
        /// Node connections closed for a frame above `internal_preauth_frame_len` before
        /// authentication.
        internal_preauth_frame => "rc_gateway_internal_preauth_refused_total" ["reason" = "frame"];
        /// Client requests refused while the store was out of service (code 5).
        store_refused_down => "rc_gateway_store_refused_total" ["reason" = "out_of_service"];
        /// Client changes whose write failed: undone and refused (code 5).
        store_refused_failed => "rc_gateway_store_refused_total" ["reason" = "write_failed"];
        /// Writes submitted again from memory after the store healed.
        store_rewrites => "rc_gateway_store_rewrites_total";
        /// AreaInstances a node reported stuck (its tick watchdog).
        instances_stuck => "rc_gateway_instances_stuck_total";
        /// AreaInstances a node's tick watchdog gave up (placed anew).
        instances_given_up => "rc_gateway_instances_given_up_total";
        /// RCEnet peers that got a session.
        enet_connections => "rc_gateway_enet_connections_total";
        /// RCEnet datagram bytes received.
        enet_bytes_in => "rc_gateway_enet_bytes_total" ["direction" = "in"];
        /// RCEnet datagram bytes sent.
        enet_bytes_out => "rc_gateway_enet_bytes_total" ["direction" = "out"];
        /// RCEnet datagrams not sent: refused by the kernel, or dropped while too many
        /// waited for room in the socket's send buffer.
        enet_send_dropped => "rc_gateway_enet_send_dropped_total";
        /// RC packets received over RCEnet.
        enet_packets_in => "rc_gateway_enet_packets_total" ["direction" = "in"];
        /// RC packets sent over RCEnet.
        enet_packets_out => "rc_gateway_enet_packets_total" ["direction" = "out"];
        /// Datagrams the ENet host refused (copied from its counters).
        enet_malformed => "rc_gateway_enet_dropped_total" ["reason" = "malformed"];
        /// RC types 200-202 from the network.
        enet_reserved_types => "rc_gateway_enet_dropped_total" ["reason" = "reserved_type"];
        /// Empty packets, unreliable packets other than `P_StandardUpdate`, positions a
        /// busy session had no room for.
        enet_bad_packets => "rc_gateway_enet_dropped_total" ["reason" = "bad_packet"];
        /// CONNECTs refused past the half-open caps (copied from the host).
        enet_half_open_refused => "rc_gateway_enet_dropped_total" ["reason" = "half_open"];
        /// Handshakes that expired (copied from the host).
        enet_half_open_expired => "rc_gateway_enet_dropped_total" ["reason" = "half_open_expired"];
        /// Peers disconnected for flooding their session's inbound queue.
        enet_inbound_overflows => "rc_gateway_enet_dropped_total" ["reason" = "inbound_overflow"];
        /// Peers dropped by ENet's timeout (copied from the host).
        enet_timeouts => "rc_gateway_enet_timeouts_total";
        /// Reliable commands sent again (copied from the host).
        enet_retransmits => "rc_gateway_enet_retransmits_total";
        /// Unreliable packets dropped by ENet's throttle (copied from the host).
        enet_throttled => "rc_gateway_enet_throttled_total";
        /// Cookie VERIFY_CONNECTs sent past the half-open caps (copied from the host).
        enet_cookies_sent => "rc_gateway_enet_cookies_total" ["outcome" = "sent"];
        /// Peers made by a valid cookie (copied from the host).
        enet_cookies_connected => "rc_gateway_enet_cookies_total" ["outcome" = "connected"];
        /// ACKs with a wrong or expired cookie (copied from the host).
        enet_cookies_bad => "rc_gateway_enet_cookies_total" ["outcome" = "bad"];
        /// CONNECTs refused past the cookie reply bound (copied from the host).
        enet_cookies_refused => "rc_gateway_enet_cookies_total" ["outcome" = "refused"];
    }
    extra {
        /// Inputs dropped past their budget, per [`Action`](crate::session::budget::Action)
        /// in `Action::ALL` order (`rc_gateway_input_dropped_total{action}`).
        input_dropped: [AtomicU64; crate::session::budget::Action::ALL.len()],
        /// From a node's `Transfer` to the commit sent to its destination
        /// (`rc_gateway_handoff_latency_seconds`).
        handoff_latency: Histogram,
        /// From a hand-out to its commit (`rc_gateway_handout_commit_seconds`).
        handout_commit: Histogram,
        /// From a zone's remote query (or action, or walk) forwarded to the zone that
        /// answers it to that answer (`rc_gateway_remote_query_seconds`).
        remote_query_latency: Histogram,
        /// RCEnet peers connected now (`rc_gateway_enet_peers`, a gauge).
        enet_peers: AtomicU64,
        /// RCEnet handshakes under way (`rc_gateway_enet_half_open`, a gauge).
        enet_half_open: AtomicU64,
    }
}

impl Metrics {
    /// Add one.
    pub fn inc(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Add `n`.
    pub fn add(c: &AtomicU64, n: usize) {
        c.fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Read.
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// Every counter and the handoff histogram, into `t`.
    pub fn render(&self, t: &mut MetricsText) {
        render_series(t, FAMILIES, &self.series());
        let dropped = "rc_gateway_input_dropped_total";
        for (a, c) in crate::session::budget::Action::ALL
            .iter()
            .zip(&self.input_dropped)
        {
            t.counter_with(
                dropped,
                family_help(FAMILIES, dropped),
                &[("action", a.name())],
                Self::get(c),
            );
        }
        for (name, v) in [
            ("rc_gateway_enet_peers", &self.enet_peers),
            ("rc_gateway_enet_half_open", &self.enet_half_open),
        ] {
            #[allow(clippy::cast_precision_loss)]
            t.gauge(name, family_help(FAMILIES, name), Self::get(v) as f64);
        }
        let latency = "rc_gateway_handoff_latency_seconds";
        t.histogram_of(
            latency,
            family_help(FAMILIES, latency),
            &[],
            &self.handoff_latency,
        );
        let handout = "rc_gateway_handout_commit_seconds";
        t.histogram_of(
            handout,
            family_help(FAMILIES, handout),
            &[],
            &self.handout_commit,
        );
        let remote = "rc_gateway_remote_query_seconds";
        t.histogram_of(
            remote,
            family_help(FAMILIES, remote),
            &[],
            &self.remote_query_latency,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_has_a_family_and_every_family_a_series() {
        let m = Metrics::default();
        let errors = shared::metrics_text::declaration_errors(
            FAMILIES,
            &m.series(),
            &[
                "rc_gateway_handoff_latency_seconds",
                "rc_gateway_handout_commit_seconds",
                "rc_gateway_remote_query_seconds",
                "rc_gateway_input_dropped_total",
                "rc_gateway_enet_peers",
                "rc_gateway_enet_half_open",
            ],
        );
        assert_eq!(errors, Vec::<String>::new());
        let mut t = MetricsText::new();
        m.render(&mut t);
        assert_eq!(
            shared::metrics_text::lint(&t.render()),
            Vec::<String>::new()
        );
    }
}
