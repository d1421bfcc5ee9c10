"""The transforms: jvp, linearize, vjp/grad, vmap, jit, control flow, custom rules."""
