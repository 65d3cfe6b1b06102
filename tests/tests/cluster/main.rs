//! Whole-cluster tests: gateways, zone nodes and clients as real processes and sockets (one binary: one link; each test still starts its own cluster).

mod compact;
mod console;
mod console_browser;
mod doors_hostile;
mod economy;
mod effects_cluster;
mod enet;
mod enet_hostile;
mod failover;
mod flood;
mod handoff;
mod hostile;
mod items_hostile;
mod multiprocess;
mod play;
mod postgres;
mod quests;
mod reload;
mod remote_actions;
mod scripts;
mod simulate;
mod spells;
mod store_hostile;
mod updates;
mod watchdog;
