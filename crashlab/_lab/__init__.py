"""The crash lab's machinery: crash-point catalogue, trial drivers (prefix and live), fault
modes (kill, torn, pause, race), oracles, failure bundles and the sweep. Private; the public
names are re-exported from :mod:`crashlab`.

May import: ``crashlab._client``, ``maka_ref``.
"""
