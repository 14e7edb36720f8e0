"""A library of multi-domain components by name: small composite bond graphs with named
ports and documented parameters and units (``docs/components.md``).

- electrical (:mod:`.electrical`): resistor, capacitor, inductor, diode, voltage_source,
  current_source, dc_motor;
- 1-D mechanics (:mod:`.mechanics`): mass, spring, damper, force_source,
  velocity_source, rack_pinion (translational); inertia, torsional_spring,
  rotational_damper, torque_source, speed_source, gearbox (rotational);
- hydraulic (:mod:`.hydraulic`): pipe, orifice, accumulator, pump;
- thermal (:mod:`.thermal`, a pseudo bond graph: temperature and heat flow):
  heat_capacity, thermal_conductance, temperature_source, heat_flow_source.

``component("resistor", "R1", resistance=100.0)`` builds one; ``components()`` lists
them; :func:`define_component` makes a user's own type.
"""

from __future__ import annotations

from bondgraph.components import electrical, hydraulic, mechanics, thermal
from bondgraph.components.base import (
    COMPONENT_TYPES, REQUIRED, ComponentListing, ComponentParameter, ComponentPort,
    ComponentType, component, components, define_component, register_component,
)

__all__ = ["ComponentType", "ComponentParameter", "ComponentPort", "ComponentListing",
           "define_component", "register_component", "component", "components",
           "COMPONENT_TYPES", "REQUIRED"]

for _module in (electrical, mechanics, hydraulic, thermal):
    for _ctype in _module.TYPES:
        if _ctype.name not in COMPONENT_TYPES:
            register_component(_ctype)
