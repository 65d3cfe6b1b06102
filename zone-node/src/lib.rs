//! Zone node: hosts AreaInstances, each a deterministic `ZoneSim` driven by a thin actor shell.
