/** The rollup VMs a snapshot can hold (meta `vm_type`, dump meta `vm_type`, `--vm`). */
export type VmType = 'move' | 'wasm' | 'evm';
export const VM_TYPES: readonly VmType[] = ['move', 'wasm', 'evm'];
