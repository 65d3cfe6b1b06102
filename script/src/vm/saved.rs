//! The portable form of a running instance: what a handoff carries and a checkpoint
//! stores. Functions and modules are named, not numbered, and every module of the
//! instance's closure is pinned by its fingerprint, so a saved instance resumes on any
//! node whose scripts are the same, and is refused (never misread) where they differ.

use serde::{Deserialize, Serialize};

use super::{Array, Frame, Pending, Vm};
use crate::bytecode::ScriptSet;
use crate::natives::pure::Banks;
use crate::value::Value;

/// A module an instance depends on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedModule {
    /// Module key.
    pub key: String,
    /// Its fingerprint when saved.
    pub hash: u64,
}

/// A frame, by name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedFrame {
    module: String,
    func: String,
    pc: u32,
    base: u32,
    ret: u32,
}

/// A saved instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedVm {
    /// The modules it needs (the entry module's closure).
    pub modules: Vec<SavedModule>,
    entry_module: String,
    frames: Vec<SavedFrame>,
    regs: Vec<Value>,
    globals: Vec<(String, Vec<Value>)>,
    arrays: Vec<(String, Vec<Array>)>,
    pending: Option<Pending>,
    park: bool,
    banks: Banks,
}

/// Why a saved instance cannot resume here.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// A module it needs is missing or did not compile.
    #[error("script module {0} is missing or does not compile here")]
    Missing(String),
    /// A module it needs has changed since it was saved.
    #[error("script module {0} has changed since the instance was saved")]
    Changed(String),
    /// The saved state is inconsistent.
    #[error("the saved instance is inconsistent: {0}")]
    Corrupt(String),
}

impl Vm {
    /// The portable form.
    pub fn save(&self, set: &ScriptSet) -> SavedVm {
        let key = |m: u16| {
            set.modules
                .get(usize::from(m))
                .map(|x| x.key.clone())
                .unwrap_or_default()
        };
        let closure = set
            .modules
            .get(usize::from(self.entry_module))
            .map(|m| m.closure.clone())
            .unwrap_or_default();
        SavedVm {
            modules: closure
                .iter()
                .filter_map(|&m| set.modules.get(usize::from(m)))
                .map(|m| SavedModule {
                    key: m.key.clone(),
                    hash: m.hash,
                })
                .collect(),
            entry_module: key(self.entry_module),
            frames: self
                .frames
                .iter()
                .map(|f| {
                    let func = set.func(f.func);
                    SavedFrame {
                        module: func.map(|x| key(x.module)).unwrap_or_default(),
                        func: func.map(|x| x.key.clone()).unwrap_or_default(),
                        pc: f.pc,
                        base: f.base,
                        ret: f.ret,
                    }
                })
                .collect(),
            regs: self.regs.clone(),
            globals: closure
                .iter()
                .map(|&m| {
                    (
                        key(m),
                        self.globals
                            .get(usize::from(m))
                            .cloned()
                            .unwrap_or_default(),
                    )
                })
                .collect(),
            arrays: closure
                .iter()
                .map(|&m| {
                    (
                        key(m),
                        self.arrays.get(usize::from(m)).cloned().unwrap_or_default(),
                    )
                })
                .collect(),
            pending: self.pending,
            park: self.park,
            banks: self.banks.clone(),
        }
    }

    /// Rebuild an instance from its portable form against this node's scripts.
    pub fn restore(saved: &SavedVm, set: &ScriptSet) -> Result<Self, RestoreError> {
        let corrupt = |m: &str| RestoreError::Corrupt(m.to_owned());
        for m in &saved.modules {
            let (_, info) = set
                .module(&m.key)
                .filter(|(_, i)| i.ok)
                .ok_or_else(|| RestoreError::Missing(m.key.clone()))?;
            if info.hash != m.hash {
                return Err(RestoreError::Changed(info.name.clone()));
            }
        }
        let pinned = |k: &str| saved.modules.iter().any(|m| m.key == k);
        let (entry_module, _) = set
            .module(&saved.entry_module)
            .filter(|_| pinned(&saved.entry_module))
            .ok_or_else(|| corrupt("unknown entry module"))?;
        let mut vm = Vm {
            frames: Vec::with_capacity(saved.frames.len()),
            regs: saved.regs.clone(),
            globals: vec![Vec::new(); set.modules.len()],
            arrays: vec![Vec::new(); set.modules.len()],
            pending: saved.pending,
            park: saved.park,
            banks: saved.banks.clone(),
            entry_module,
            at_back_edge: false,
        };
        if vm.regs.len() > super::MAX_REGS || saved.frames.len() > super::MAX_DEPTH {
            return Err(corrupt("too large"));
        }
        for f in &saved.frames {
            if !pinned(&f.module) {
                return Err(corrupt("a frame of an unpinned module"));
            }
            let (_, info) = set
                .module(&f.module)
                .ok_or_else(|| corrupt("frame module"))?;
            let &fid = info
                .funcs
                .get(&f.func)
                .ok_or_else(|| corrupt("frame function"))?;
            let func = set.func(fid).ok_or_else(|| corrupt("frame function"))?;
            if f.pc as usize > func.code.len() {
                return Err(corrupt("program counter"));
            }
            let need = f.base as usize + usize::from(func.nregs).max(1);
            if need > vm.regs.len() {
                return Err(corrupt("registers"));
            }
            if f.ret != u32::MAX && f.ret as usize >= vm.regs.len() {
                return Err(corrupt("return register"));
            }
            vm.frames.push(Frame {
                func: fid,
                pc: f.pc,
                base: f.base,
                ret: f.ret,
            });
        }
        if let Some(p) = vm.pending
            && p.reg as usize >= vm.regs.len()
        {
            return Err(corrupt("pending register"));
        }
        for (k, g) in &saved.globals {
            let (m, info) = set
                .module(k)
                .filter(|_| pinned(k))
                .ok_or_else(|| corrupt("globals of an unknown module"))?;
            if g.len() != info.globals.len() {
                return Err(corrupt("globals"));
            }
            if let Some(slot) = vm.globals.get_mut(usize::from(m)) {
                slot.clone_from(g);
            }
        }
        let mut total = 0usize;
        for (k, arrs) in &saved.arrays {
            let (m, info) = set
                .module(k)
                .filter(|_| pinned(k))
                .ok_or_else(|| corrupt("arrays of an unknown module"))?;
            if arrs.len() != info.arrays.len() {
                return Err(corrupt("arrays"));
            }
            for (a, decl) in arrs.iter().zip(&info.arrays) {
                let n = super::array_len(&a.dims).map_err(|_| corrupt("array size"))?;
                if n != a.data.len() || a.ty != decl.ty || a.dims.len() != decl.dims.len() {
                    return Err(corrupt("array shape"));
                }
                total += n;
            }
            if total > super::MAX_ARRAYS_TOTAL {
                return Err(corrupt("arrays too large"));
            }
            if let Some(slot) = vm.arrays.get_mut(usize::from(m)) {
                slot.clone_from(arrs);
            }
        }
        Ok(vm)
    }
}
