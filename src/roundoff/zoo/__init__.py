"""roundoff.zoo"""
