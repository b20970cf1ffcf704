"""produce"""
