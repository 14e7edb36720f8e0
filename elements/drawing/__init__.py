"""Seeing a run: the motion's data, the 3D scene, the HTML page, videos, a result's quick-look figure and notebook card."""
