//! The zone as the scripts' host: [`ZoneHost`] implements `script::vm::Host` over the
//! zone state for the instance that is running, and dispatches every native to its
//! category module in [`super::natives`].

use script::bytecode::HostGlobal;
use script::natives::Native;
use script::vm::{Flow, Host, NativeCx};
use script::{RuntimeError, Value};

use crate::sim::instances::{InstanceCx, InstanceId, Wait};
use crate::sim::state::ZoneState;

/// The port Realm Crafter's `ServerPort` host global reports.
pub const SERVER_PORT: i32 = 25000;

/// The host for one instance's run.
pub struct ZoneHost<'a> {
    /// The zone.
    pub st: &'a mut ZoneState,
    /// The running instance's id (`hSI`).
    pub id: InstanceId,
    /// Its Realm Crafter fields.
    pub cx: &'a mut InstanceCx,
    /// Set by a native that suspends: what the instance waits for.
    pub wait: Option<Wait>,
    /// Set by a native that ends the running instance (its actor was freed).
    pub end_self: bool,
}

impl<'a> ZoneHost<'a> {
    /// A host for instance `id`.
    pub fn new(st: &'a mut ZoneState, id: InstanceId, cx: &'a mut InstanceCx) -> Self {
        Self {
            st,
            id,
            cx,
            wait: None,
            end_self: false,
        }
    }

    /// Suspend the script until `wait` is over.
    pub fn suspend(&mut self, wait: Wait) -> Result<Flow, RuntimeError> {
        self.wait = Some(wait);
        Ok(Flow::Suspend)
    }
}

impl Host for ZoneHost<'_> {
    fn call(
        &mut self,
        native: Native,
        args: &[Value],
        cx: &mut NativeCx<'_>,
    ) -> Result<Flow, RuntimeError> {
        self.st.scripts.stats.native_calls += 1;
        super::natives::call(self, native, args, cx)
    }

    fn host_global(&mut self, which: HostGlobal) -> i32 {
        match which {
            HostGlobal::Hsi => i32::try_from(self.id & 0x7fff_ffff).unwrap_or(0),
            HostGlobal::Host => 1,
            HostGlobal::ServerPort => SERVER_PORT,
        }
    }
}
