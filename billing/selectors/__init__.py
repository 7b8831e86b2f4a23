"""Reads about money: prices."""
