//! What a call may reach: the policy and the tools' settings now (`Scope`), narrowed by client
//! roots under the ceiling, and the sandbox that a server started without directories applies
//! when the client's first roots arrive.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use crate::policy::{Access, AllowedRoot, Policy};
use crate::protocol::lock;
use crate::protocol::roots;
use crate::sandbox::Sandbox;
use crate::tools::Settings;

/// The allowed set and the tools' settings, as one call sees them from start to end.
#[derive(Clone)]
pub struct Scope {
    pub policy: Arc<Policy>,
    pub settings: Arc<Settings>,
}

/// The scope now, and what may replace it. Each call takes a snapshot when it is read.
pub struct Scopes {
    current: RwLock<Scope>,
    /// The most the allowed set may be: the command line's directories, or the client's first
    /// roots when there were none.
    ceiling: Mutex<Vec<AllowedRoot>>,
    deferred_sandbox: Mutex<Option<Sandbox>>,
    /// `--read-only`: a client's first roots become read-only directories, not read-write.
    read_only: bool,
}

impl Scopes {
    pub fn new(
        policy: Policy,
        settings: Arc<Settings>,
        deferred_sandbox: Option<Sandbox>,
        read_only: bool,
    ) -> Scopes {
        let ceiling = policy.roots().to_vec();
        Scopes {
            current: RwLock::new(Scope { policy: Arc::new(policy), settings }),
            ceiling: Mutex::new(ceiling),
            deferred_sandbox: Mutex::new(deferred_sandbox),
            read_only,
        }
    }

    pub fn current(&self) -> Scope {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// While the sandbox waits for the client's roots, no thread may start that the sandbox
    /// would not cover (Landlock confines the thread that applies it and those it starts
    /// afterwards), so every call runs on the reading thread. Nothing is allowed yet anyway.
    pub fn sandbox_deferred(&self) -> bool {
        lock(&self.deferred_sandbox).is_some()
    }

    /// Narrows the allowed set to the client's roots (never beyond the ceiling). A server
    /// started without directories takes the first roots as its ceiling and applies the
    /// sandbox now, from this thread, before any thread that would escape it exists.
    pub fn apply_roots(&self, client_roots: &[PathBuf]) {
        let mut ceiling = lock(&self.ceiling);
        let mut settings = (*self.current().settings).clone();
        if ceiling.is_empty() {
            if client_roots.is_empty() {
                return;
            }
            *ceiling = roots::as_ceiling(client_roots);
            if self.read_only {
                ceiling.iter_mut().for_each(|root| root.access = Access::Read);
            }
            if let Some(sandbox) = lock(&self.deferred_sandbox).take() {
                let applied = sandbox.apply(&ceiling);
                tracing::info!(status = ?applied.status, "sandbox applied with the client's roots");
                settings.sandbox_note = applied.status.note();
                settings.confinement = applied.confinement;
            }
        }
        let allowed = roots::narrow(&ceiling, client_roots);
        for root in &allowed {
            tracing::info!(path = %root.path.display(), access = ?root.access, "allowed directory (client roots)");
        }
        let policy = self.current().policy.with_roots(allowed);
        *self.current.write().unwrap_or_else(|e| e.into_inner()) =
            Scope { policy: Arc::new(policy), settings: Arc::new(settings) };
    }
}
